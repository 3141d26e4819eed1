package config_test

import (
	"fmt"

	"github.com/muster-gg/muster/config"
)

func ExampleParse_error() {
	file := []byte(`
muster:
  server:
    fleet:
      hearbeat: 5
`)
	// A server gives its defaults, muster.DefaultConfig(), as the base: an
	// unknown key is refused whatever the base.
	_, err := config.Parse(file, nil, config.Config{})
	fmt.Println(err)
	// Output: config: muster.server.fleet.hearbeat / MUSTER__SERVER__FLEET__HEARBEAT: unknown key; did you mean muster.server.fleet.heartbeat? (line 5)
}
