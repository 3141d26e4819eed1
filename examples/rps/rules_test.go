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

// Any value of the variables gives positive rules or an error, never a
// panic.
func FuzzRulesFromEnv(f *testing.F) {
	for _, s := range []string{"10s", "", "0", "-1s", "1h2m", "9999999999h", "1e9ns"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, turn, forfeit string) {
		env := map[string]string{"RPS_TURN": turn, "RPS_FORFEIT": forfeit}
		r, err := RulesFromEnv(func(k string) string { return env[k] })
		if err == nil && (r.Turn <= 0 || r.Forfeit <= 0) {
			t.Fatalf("%q, %q: rules %+v without an error", turn, forfeit, r)
		}
	})
}
