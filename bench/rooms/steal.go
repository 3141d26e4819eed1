package main

import (
	"os"
	"strconv"
	"strings"
)

// cpuTimes reads the machine's CPU time from /proc/stat (Linux): the time
// stolen by the hypervisor (the time a virtual CPU wanted to run and the
// host ran something else) and the total, in the kernel's ticks. ok is
// false where there is no /proc/stat.
func cpuTimes() (steal, total int64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, s := range f[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i < 8 { // guest time is counted in user time already
			total += n
		}
		if i == 7 {
			steal = n
		}
	}
	return steal, total, true
}

// stealMeter measures the share of the machine's CPU time the hypervisor
// took between start and done: steps that ran late because the host did
// not run this machine's CPUs are not the program's doing.
type stealMeter struct {
	steal, total int64
	ok           bool
}

func startSteal() stealMeter {
	s, t, ok := cpuTimes()
	return stealMeter{steal: s, total: t, ok: ok}
}

// done returns the stolen share since start, as text ("" when unknown).
func (m stealMeter) done() string {
	s, t, ok := cpuTimes()
	if !ok || !m.ok || t <= m.total {
		return ""
	}
	return strconv.FormatFloat(100*float64(s-m.steal)/float64(t-m.total), 'f', 1, 64) + "% of CPU time stolen by the hypervisor"
}
