//go:build unix

package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's
// times: 100 on every Linux this runs on.
const clockTicks = 100

// procCPU is process pid's CPU time, user and system of all its threads,
// in seconds (0 when it cannot be read).
func procCPU(pid int) float64 {
	u, s := procTimes(pid)
	return u + s
}

// procTimes is process pid's CPU time in user space and in the kernel, of
// all its threads, in seconds. The kernel's share of a server here is
// mostly TCP on loopback, where the writer of a segment also pays for its
// delivery to the reader: what every framework pays alike per frame.
func procTimes(pid int) (user, sys float64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// The fields after the command's name, which may hold spaces and
	// parentheses: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return u / clockTicks, s / clockTicks
}

// procRSS is process pid's resident set, in bytes.
func procRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
