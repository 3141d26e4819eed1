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
		c := defaults(t)
		err := config.ApplyEnv(&c, environ)
		checkError(t, err)
		if err != nil {
			if !reflect.DeepEqual(c, defaults(t)) {
				t.Fatalf("ApplyEnv failed but changed the config to %+v", c)
			}
			return
		}
		_, err = config.Load("", environ, defaults(t))
		checkError(t, err)
	})
}

// FuzzParse drives the YAML parser.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, nil, defaults(t))
		checkError(t, err)
		if err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("Parse returned a config that fails Validate: %v", err)
			}
		}
	})
}

// FuzzRedactURL: the password of a Redis URL never survives RedactURL,
// whatever characters it and the rest of the URL hold.
func FuzzRedactURL(f *testing.F) {
	f.Add("user", "S3cret", "redis", "")
	f.Add("", "1234/x", "h", "?db=1")
	f.Add("u", "p@ss", "h:1", "")
	f.Add("u:v", "pw#x", "h", "/0")
	f.Fuzz(func(t *testing.T, user, pass, host, rest string) {
		s := "redis://" + user + ":" + pass + "@" + host + rest
		out := config.RedactURL(s)
		if len(pass) < 4 || strings.Contains(user+host+rest+"redis://:xxxxx@%", pass) {
			return // too short to tell, or also elsewhere in the URL
		}
		if strings.Contains(out, pass) {
			t.Fatalf("RedactURL(%q) = %q shows the password %q", s, out, pass)
		}
	})
}
