package config_test

import (
	"fmt"

	"github.com/muster-gg/muster/config"
)

func Example() {
	file := []byte(`
muster:
  server:
    drain:
      timeout: 360
    fleet:
      internal-address: "{ip}:8000"
      public-address: "wss://{node-id}.example.com"
  security:
    key: 0123456789abcdef0123
`)
	// In a server: config.Load("config.yml", os.Environ()).
	cfg, err := config.Parse(file, []string{
		"MUSTER__SERVER__FLEET__REDIS=redis:6379",
		"MUSTER__SERVER__CAPACITY__MAX_LOAD=300",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Server.Fleet.Redis, cfg.Server.Capacity.MaxLoad, cfg.Server.Drain.Timeout)
	fmt.Println(cfg.InternalAddress("10.0.0.7"), cfg.PublicAddress("eu-1"), cfg.Secret())
	// Output:
	// redis:6379 300 6m0s
	// 10.0.0.7:8000 wss://eu-1.example.com 0123456789abcdef0123
}

func ExampleParse_error() {
	file := []byte(`
muster:
  server:
    fleet:
      hearbeat: 5
`)
	_, err := config.Parse(file, nil)
	fmt.Println(err)
	// Output: config: muster.server.fleet.hearbeat / MUSTER__SERVER__FLEET__HEARBEAT: unknown key; did you mean muster.server.fleet.heartbeat? (line 5)
}
