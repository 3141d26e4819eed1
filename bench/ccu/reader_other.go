//go:build unix && !linux

package main

import "errors"

// tickReader is Linux's (reader_linux.go); elsewhere every player reads
// on a goroutine of its own.
type tickReader struct{}

func newTickReader(protocol) *tickReader { return nil }

func (*tickReader) add(*player) bool { return false }

func writeFD(int, []byte) error { return errors.New("no raw writes here") }
