package main

import (
	"testing"
	"time"
)

// The rules come from the environment; a bad value is an error naming its
// variable, never a default used in silence.
func TestRulesFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Rules
		err  string
	}{
		{name: "defaults", want: defaultRules},
		{name: "set", env: map[string]string{"RPS_TURN": "2s", "RPS_FORFEIT": "1m", "RPS_RESULTS": "r.jsonl"},
			want: Rules{Turn: 2 * time.Second, Forfeit: time.Minute, Results: "r.jsonl"}},
		{name: "no unit", env: map[string]string{"RPS_TURN": "10"},
			err: `rps: RPS_TURN: want a positive duration such as 10s, got "10"`},
		{name: "negative", env: map[string]string{"RPS_FORFEIT": "-1s"},
			err: `rps: RPS_FORFEIT: want a positive duration such as 10s, got "-1s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RulesFromEnv(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
