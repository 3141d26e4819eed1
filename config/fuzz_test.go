package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/muster-gg/muster/config"
)

// checkError fails unless err is nil or a one-line *Error.
func checkError(t *testing.T, err error) {
	t.Helper()
	var e *config.Error
	switch {
	case err == nil:
	case !errors.As(err, &e):
		t.Fatalf("error %#v is not an *Error", err)
	case strings.ContainsAny(err.Error(), "\r\n") || !strings.HasPrefix(err.Error(), "config: "):
		t.Fatalf("error is not one config: line: %q", err.Error())
	}
}

// FuzzApplyEnv drives the environment parser with environments of
// newline-separated variables.
func FuzzApplyEnv(f *testing.F) {
	f.Fuzz(func(t *testing.T, env string) {
		environ := strings.Split(env, "\n")
		c := config.Default()
		err := config.ApplyEnv(&c, environ)
		checkError(t, err)
		if err != nil {
			if !reflect.DeepEqual(c, config.Default()) {
				t.Fatalf("ApplyEnv failed but changed the config to %+v", c)
			}
			return
		}
		_, err = config.Load("", environ)
		checkError(t, err)
	})
}

// FuzzParse drives the YAML parser.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, nil)
		checkError(t, err)
		if err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("Parse returned a config that fails Validate: %v", err)
			}
		}
	})
}
