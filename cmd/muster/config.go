package main

import (
	"fmt"
	"io"
	"os"

	"github.com/muster-gg/muster"
)

// checked is what config check prints with --json.
type checked struct {
	File     string   `json:"file"`
	OK       bool     `json:"ok"`
	Error    string   `json:"error,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// configCheck loads a configuration file as a server would, the MUSTER__
// environment included, and reports the first problem. It runs the same
// muster.CheckConfig a server runs at start, so the two agree. Warnings (a
// variable that looks like a setting but is ignored) go to stderr and do
// not fail the check.
func configCheck(args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlags("config check", &o)
	pos, err := parse(fs, args, 1, "the FILE to check")
	if err != nil {
		return err
	}
	file := pos[0]
	cfg, err := muster.LoadConfigFile(file, os.Environ())
	warnings := cfg.Warnings()
	if o.json {
		res := checked{File: file, OK: err == nil, Warnings: warnings}
		if err != nil {
			res.Error = err.Error()
		}
		if werr := writeJSON(stdout, res); werr != nil {
			return werr
		}
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "muster: warning: %s\n", oneLine(w))
	}
	if err == nil {
		fmt.Fprintf(stdout, "%s: ok\n", file)
	}
	return err
}
