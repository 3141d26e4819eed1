//go:build !unix

package main

import (
	"fmt"
	"os"
	"runtime"
)

// main refuses: the benchmark pins its processes to cores with taskset,
// reads their CPU time in /proc and toggles profiles with SIGUSR1.
func main() {
	fmt.Fprintf(os.Stderr, "bench/ccu runs on Linux, not on %s\n", runtime.GOOS)
	os.Exit(1)
}
