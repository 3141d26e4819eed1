package main

import (
	"fmt"
	"time"
)

// Rules are the match's timings and where results go, read from the
// environment (RulesFromEnv) beside Muster's own configuration.
type Rules struct {
	// Turn is the time a player has to throw (RPS_TURN). Default 10s.
	Turn time.Duration
	// Forfeit is how long a player may be away before it loses the match
	// (RPS_FORFEIT). Default 30s. A player away for longer than a turn
	// loses that turn's round but keeps its seat until then: against an
	// opponent who throws, one away for two turns has lost on turns
	// before a Forfeit longer than that.
	Forfeit time.Duration
	// Results is the file each match's result is appended to, one JSON
	// line per match (RPS_RESULTS). Default "": results are only logged.
	Results string
}

// RulesFromEnv returns the rules with the values getenv gives, defaults
// for the variables not set; a value that does not parse, or is not
// positive, is an error naming its variable.
func RulesFromEnv(getenv func(string) string) (Rules, error) {
	r := defaultRules
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{"RPS_TURN", &r.Turn}, {"RPS_FORFEIT", &r.Forfeit}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return Rules{}, fmt.Errorf("rps: %s: want a positive duration such as 10s, got %q", v.name, s)
		}
		*v.to = d
	}
	r.Results = getenv("RPS_RESULTS")
	return r, nil
}
