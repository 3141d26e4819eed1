package room

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigErrorsAreErrConfig(t *testing.T) {
	cases := map[string]Config{
		"rate":            {Rate: 5000},
		"workers":         {Workers: -1},
		"hello-timeout":   {HelloTimeout: -time.Second},
		"limits.store":    {Limits: Limits{Store: "disk"}},
		"limits.lockout":  {Limits: Limits{Lockout: -1}},
		"limits.connects": {Limits: Limits{Connects: -1}},
		"limits.open":     {Limits: Limits{Open: -1}},
	}
	for key, cfg := range cases {
		t.Run(key, func(t *testing.T) {
			_, err := New[*csim, int, *cplayer](newCounter(), cfg, quietLog)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
			env := "MUSTER__ROOM__" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "__").Replace(key))
			if !strings.Contains(err.Error(), "muster.room."+key) || !strings.Contains(err.Error(), env) {
				t.Fatalf("error %q names neither muster.room.%s nor %s", err, key, env)
			}
		})
	}
}
