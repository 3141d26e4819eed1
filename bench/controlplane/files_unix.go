//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// checkFiles fails early when this process may not open enough sockets
// for the largest fleet: every server's client may hold poolSize plus
// pipelinePoolSize connections. (Go raises the soft RLIMIT_NOFILE to the hard limit at
// start-up, so the hard limit is what counts.)
func checkFiles(ks []int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	need := uint64(64)
	for _, k := range ks {
		need = max(need, uint64(k*(poolSize+pipelinePoolSize)+64))
	}
	if lim.Cur < need {
		return fmt.Errorf("open-file limit %d is below the %d this run may need; raise ulimit -n", lim.Cur, need)
	}
	return nil
}
