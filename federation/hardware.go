package federation

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// ReadHardware reports this machine from the Go runtime and, on Linux,
// /proc: OS, architecture, logical CPUs, total memory, host name, kernel
// release. Fields it cannot read are left empty.
func ReadHardware() Hardware {
	h := Hardware{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if name, err := os.Hostname(); err == nil {
		h.Hostname = clip(name, maxHardwareText)
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = clip(strings.TrimSpace(string(data)), maxHardwareText)
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		h.MemoryBytes = memTotal(data)
	}
	return h
}

// memTotal parses MemTotal from /proc/meminfo, in bytes.
func memTotal(meminfo []byte) uint64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.ParseUint(f[1], 10, 64)
			if err == nil {
				return kib * 1024
			}
		}
	}
	return 0
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
