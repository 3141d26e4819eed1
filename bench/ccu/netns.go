//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// veth is the network of a run with -net veth: the server in a network
// namespace of its own and the load generator in another, joined by a
// veth pair, as two machines are by a wire. Each side's receive work (the
// kernel's TCP input of the other's segments) runs on its own core
// (receive packet steering to that core), where on loopback the writer
// of a segment does its delivery too: the server paid for the load
// generator's receive of its states, and the load generator for the
// server's receive of its inputs. Neither namespace has firewall rules,
// so no connection tracking either, where loopback goes through the host's
// (Docker's rules load it on this machine).
type veth struct {
	srvNS, loadNS string
	srvIP         string
}

// The pair's addresses: the namespaces are the run's own, so they meet no
// other route.
const (
	vethSrvIP  = "10.231.0.1"
	vethLoadIP = "10.231.0.2"
)

// setupVeth creates the namespaces and the pair, with each side's receive
// steered to its core (a single CPU number each).
func setupVeth(serverCore, loadCore string) (*veth, error) {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("-net veth needs ip (iproute2) on PATH")
	}
	srvMask, err := cpuMask(serverCore)
	if err != nil {
		return nil, err
	}
	loadMask, err := cpuMask(loadCore)
	if err != nil {
		return nil, err
	}
	id := strconv.Itoa(os.Getpid() % 100000)
	v := &veth{srvNS: "muster-ccu-srv-" + id, loadNS: "muster-ccu-load-" + id, srvIP: vethSrvIP}
	srvDev, loadDev := "ccus"+id, "ccul"+id
	steps := [][]string{
		{"ip", "netns", "add", v.srvNS},
		{"ip", "netns", "add", v.loadNS},
		{"ip", "link", "add", srvDev, "type", "veth", "peer", "name", loadDev},
		{"ip", "link", "set", srvDev, "netns", v.srvNS},
		{"ip", "link", "set", loadDev, "netns", v.loadNS},
		{"ip", "-n", v.srvNS, "addr", "add", vethSrvIP + "/30", "dev", srvDev},
		{"ip", "-n", v.loadNS, "addr", "add", vethLoadIP + "/30", "dev", loadDev},
		{"ip", "-n", v.srvNS, "link", "set", "lo", "up"},
		{"ip", "-n", v.loadNS, "link", "set", "lo", "up"},
		{"ip", "-n", v.srvNS, "link", "set", srvDev, "up"},
		{"ip", "-n", v.loadNS, "link", "set", loadDev, "up"},
		// /sys/class/net shows the namespace's own devices under ip netns exec.
		{"ip", "netns", "exec", v.srvNS, "sh", "-c", "echo " + srvMask + " > /sys/class/net/" + srvDev + "/queues/rx-0/rps_cpus"},
		{"ip", "netns", "exec", v.loadNS, "sh", "-c", "echo " + loadMask + " > /sys/class/net/" + loadDev + "/queues/rx-0/rps_cpus"},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			v.close()
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return v, nil
}

// close deletes the namespaces, and with them the pair.
func (v *veth) close() {
	for _, ns := range []string{v.srvNS, v.loadNS} {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}

// server returns the command name with args, run in the server's
// namespace when there is one (v not nil). ip netns exec execs it: its
// pid is the process's.
func (v *veth) server(name string, args ...string) *exec.Cmd {
	return v.command(func(v *veth) string { return v.srvNS }, name, args...)
}

// load is server for the load generator.
func (v *veth) load(name string, args ...string) *exec.Cmd {
	return v.command(func(v *veth) string { return v.loadNS }, name, args...)
}

// command runs name in the namespace ns picks, if v is not nil.
func (v *veth) command(ns func(*veth) string, name string, args ...string) *exec.Cmd {
	if v == nil {
		return exec.Command(name, args...)
	}
	return exec.Command("ip", append([]string{"netns", "exec", ns(v), name}, args...)...)
}

// host is the address the server listens on and the load generator
// dials.
func (v *veth) host() string {
	if v == nil {
		return "127.0.0.1"
	}
	return v.srvIP
}

// cpuMask is the hexadecimal mask of one CPU number, as rps_cpus takes it.
func cpuMask(core string) (string, error) {
	n, err := strconv.Atoi(core)
	if err != nil || n < 0 || n > 31 {
		return "", fmt.Errorf("-net veth needs a single CPU number for each side, not %q", core)
	}
	return strconv.FormatUint(1<<n, 16), nil
}

// coreBusy is CPU core's busy time since boot, in seconds: user, nice,
// system, irq and softirq from /proc/stat, whatever ran there. With the
// server alone on its core this holds its receive work too, which the
// kernel charges to whatever it interrupted (the idle task, when the
// server sleeps), not always to the server.
func coreBusy(core string) float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[0] != "cpu"+core {
			continue
		}
		busy := 0.0
		for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
			v, _ := strconv.ParseFloat(f[i], 64)
			busy += v
		}
		return busy / clockTicks
	}
	return 0
}

// closeOnSignal deletes v's namespaces when the run is interrupted.
func closeOnSignal(v *veth) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		v.close()
		os.Exit(130)
	}()
}
