package main

import (
	"fmt"
	"io"
	"os"

	"github.com/muster-gg/muster/config"
)

// checked is what config check prints with --json.
type checked struct {
	File  string `json:"file"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// configCheck loads a configuration file as a server would, the MUSTER__
// environment included, and reports the first problem.
func configCheck(args []string, stdout io.Writer) error {
	var o options
	fs := newFlags("config check", &o)
	pos, err := parse(fs, args, 1, "the FILE to check")
	if err != nil {
		return err
	}
	file := pos[0]
	_, err = config.Load(file, os.Environ())
	if o.json {
		res := checked{File: file, OK: err == nil}
		if err != nil {
			res.Error = err.Error()
		}
		if werr := writeJSON(stdout, res); werr != nil {
			return werr
		}
	} else if err == nil {
		fmt.Fprintf(stdout, "%s: ok\n", file)
	}
	return err
}
