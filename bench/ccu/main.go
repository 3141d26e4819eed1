//go:build unix

// Command ccu measures the whole path of connected players (SPEC N6):
// rooms of two, each player sending an input 20 times a second and the
// room broadcasting both positions and a tick 20 times a second, on
// Muster (a muster.Serve program, room.rate 20) and, in the same run,
// the same game on Colyseus 0.18 (colyseus/server.js, pinned by
// colyseus/package-lock.json) when node and npm are on PATH.
//
// Each server runs alone on one core (taskset, GOMAXPROCS=1 for Muster);
// the load generator, this program in another role, runs on the other
// core and drives N players through each framework's real protocol
// (ticket or seat, WebSocket, hello or join, queue, inputs), writing
// each input with a value of its own and timing the first state that
// shows it. It reports its own CPU time and refuses a run in which it
// used more than -load-max of its core: then the figure would be its
// own, not the server's.
//
// It prints, per N and framework: the server's CPU per player-second (and
// its user-space part, the framework's own work beside the kernel's TCP),
// p50 and p99 input-to-state latency, states a second per player, the
// server's resident memory, its CPU per state delivered, and the ratios
// Muster/Colyseus; then the
// largest N each kept with p99 within one step + 10 ms and at least
// 19.5 states a second.
//
// Every run is bounded (players, joining time, warm-up, measuring time),
// uses loopback only (or, with -net veth, two network namespaces of its
// own, joined by a veth pair, deleted at the end), and stops by itself.
//
//	go run ./bench/ccu                                   # 500 and 1,000 players
//	go run ./bench/ccu -n 1000,4000 -order colyseus,muster
//	go run ./bench/ccu -n 1000 -order muster,muster-bin     # the binary codec beside JSON
//	go run ./bench/ccu -n 1000 -order muster,muster-portable # the event loop beside the portable path
//	go run ./bench/ccu -n 1000 -net veth                     # as two machines: each side's receive on its own core
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/muster-gg/muster/room"
)

// The bound a framework keeps at N: p99 within one step (50 ms at 20 Hz)
// + 10 ms, and states at the rate they are sent.
const (
	boundP99    = 60.0 // ms
	boundStates = 19.5
)

func main() {
	ns := flag.String("n", "500,1000", "player counts to run, comma-separated")
	order := flag.String("order", "muster,colyseus", "frameworks in the order each N runs them (alternate between runs): muster, colyseus, muster-bin (Muster with a binary codec of the game's inputs and states), muster-portable (Muster with muster.room.sockets portable: a reader and a writer goroutine per player instead of the event loop), before (see -before)")
	warm := flag.Duration("warm", 3*time.Second, "warm-up once every player has a state")
	measure := flag.Duration("measure", 10*time.Second, "measuring window per run")
	joinTimeout := flag.Duration("join-timeout", 90*time.Second, "most time for all players to join")
	serverCore := flag.String("server-core", "0", "CPU the server is pinned to (taskset -c)")
	loadCore := flag.String("load-core", "1", "CPU the load generator is pinned to")
	loadMax := flag.Float64("load-max", 0.85, "largest share of its core the load generator may use in a run that is reported")
	colyDir := flag.String("colyseus-dir", "bench/ccu/colyseus", "directory of the Colyseus server and its package-lock.json")
	before := flag.String("before", "", "a build of this program from another commit (go build -o PATH ./bench/ccu there): its Muster server runs as the framework \"before\", to measure a change in the same run (add \"before\" to -order)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the Muster server's measuring window (the last N) to this file")
	verbose := flag.Bool("v", false, "print each run's raw result")
	network := flag.String("net", "loopback", "the network between the load generator and the server: loopback, or veth (a network namespace each, joined by a veth pair, each side's receive on its own core: as two machines; needs root and ip)")
	loadProfile := flag.String("load-cpuprofile", "", "write a CPU profile of the load generator's measuring window (the last run) to this file")
	// Internal roles.
	role := flag.String("role", "", "internal: muster-server or load")
	port := flag.Int("port", 0, "internal: the server's port")
	host := flag.String("host", "127.0.0.1", "internal: the server's address")
	target := flag.String("target", "", "internal: muster or colyseus")
	pid := flag.Int("server-pid", 0, "internal: the server's pid")
	n := flag.Int("players", 0, "internal: players to drive")
	label := flag.String("label", "", "internal: the framework's name in the result")
	binaryCodecFlag := flag.Bool("binary", false, "internal: serve with the binary codec")
	flag.Parse()

	switch *role {
	case "muster-server":
		if err := serveMuster(*host, *port, *profile, *binaryCodecFlag); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	case "load":
		runLoad(*target, *label, net.JoinHostPort(*host, strconv.Itoa(*port)), *n, *warm, *measure, *joinTimeout, *pid, *serverCore, *profile != "", *loadProfile)
		return
	}

	var counts []int
	for _, s := range strings.Split(*ns, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 2 || k > 65535 {
			fmt.Fprintf(os.Stderr, "bad -n entry %q (2 to 65535)\n", s)
			os.Exit(2)
		}
		counts = append(counts, k)
	}
	targets := strings.Split(*order, ",")
	if _, err := exec.LookPath("taskset"); err != nil {
		fmt.Fprintln(os.Stderr, "taskset not found: the runs must be pinned")
		os.Exit(1)
	}
	if hasTarget(targets, "colyseus") {
		if err := colyseusReady(*colyDir); err != nil {
			fmt.Fprintln(os.Stderr, "colyseus skipped:", err)
			targets = without(targets, "colyseus")
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if hasTarget(targets, "before") && *before == "" {
		fmt.Fprintln(os.Stderr, `-order names "before" without -before`)
		os.Exit(2)
	}
	var v *veth
	switch *network {
	case "loopback":
	case "veth":
		if v, err = setupVeth(*serverCore, *loadCore); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer v.close()
		closeOnSignal(v)
	default:
		fmt.Fprintf(os.Stderr, "bad -net %q: loopback or veth\n", *network)
		os.Exit(2)
	}
	r := runner{self: self, net: v, before: *before, loadProfile: *loadProfile, serverCore: *serverCore, loadCore: *loadCore, colyDir: *colyDir,
		warm: *warm, measure: *measure, joinTimeout: *joinTimeout}

	fmt.Printf("rooms of two, inputs and states at 20 Hz; server on CPU %s (GOMAXPROCS=1 for Muster), load generator on CPU %s, over %s; %v measured per run after %v warm-up\n\n",
		*serverCore, *loadCore, *network, *measure, *warm)
	showCore = v != nil
	fmt.Printf("%7s  %-15s  %14s  %10s%s  %8s  %8s  %9s  %9s  %11s  %6s  %s\n", "players", "server", "CPU µs/pl·s", "user µs", coreCell("core µs"), "p50 ms", "p99 ms", "states/s", "RSS MB", "µs/state", "load", "within bound")
	best := map[string]int{}
	for i, k := range counts {
		got := map[string]result{}
		for _, t := range targets {
			prof := ""
			if t == "muster" && i == len(counts)-1 {
				prof = *profile
			}
			res := r.run(t, k, prof)
			if *verbose {
				b, _ := json.Marshal(res)
				fmt.Println(string(b))
			}
			if res.Err == "" && res.LoadCPU/res.Seconds > *loadMax {
				res.Err = fmt.Sprintf("load generator saturated (%.0f%% of its core): not reported", 100*res.LoadCPU/res.Seconds)
			}
			got[t] = res
			printRow(res, best)
		}
		printRatio("ratio M/C", got["muster"], got["colyseus"])
		printRatio("M/before", got["muster"], got["before"])
		printRatio("bin/JSON", got["muster-bin"], got["muster"])
		printRatio("loop/portable", got["muster"], got["muster-portable"])
	}
	fmt.Printf("\nlargest N within p99 ≤ %.0f ms and ≥ %.1f states/s:", boundP99, boundStates)
	for _, t := range targets {
		fmt.Printf(" %s %d", t, best[t])
	}
	if best["muster"] > 0 && best["colyseus"] > 0 {
		fmt.Printf(", ratio %.2fx", float64(best["muster"])/float64(best["colyseus"]))
	}
	fmt.Println(" (of the counts run)")
}

func cpuPer(r result) float64 { return r.ServerCPU / (float64(r.N) * r.Seconds) * 1e6 }

// userPer is the server's CPU per player-second in user space: the
// framework's own work, without the kernel's TCP that every framework pays
// alike.
func userPer(r result) float64 { return r.ServerUser / (float64(r.N) * r.Seconds) * 1e6 }

// corePer is the server core's busy time per player-second, whatever ran
// there: over -net veth, the server's receive work is done on its core but
// charged to the server only when it interrupts it, so this, not cpuPer,
// holds all of it (and anything else that ran on the core: the figure
// means something only on a machine otherwise idle).
func corePer(r result) float64 { return r.CoreBusy / (float64(r.N) * r.Seconds) * 1e6 }

// showCore says whether the tables have the column "core µs": over -net
// veth only, where the server's receive work may not be charged to it.
var showCore bool

// coreCell is the "core µs" cell holding s, or nothing.
func coreCell(s string) string {
	if !showCore {
		return ""
	}
	return fmt.Sprintf("  %10s", s)
}

// cpuPerState is the server's CPU per state delivered: on a machine
// whose other work starves the server, it delivers fewer states than the
// game sends, and its CPU per player-second falls with them; this does
// not.
func cpuPerState(r result) float64 { return r.ServerCPU / float64(max(r.States, 1)) * 1e6 }

func statesPer(r result) float64 { return float64(r.States) / float64(r.N) / r.Seconds }

// printRatio prints a's figures over b's, when both ran.
func printRatio(label string, a, b result) {
	if a.Err != "" || b.Err != "" || a.N == 0 || b.N == 0 {
		return
	}
	fmt.Printf("%7s  %-15s  %13.2fx  %9.2fx%s  %7.2fx  %7.2fx  %8.2fx  %8.2fx  %10.2fx\n", "", label,
		cpuPer(a)/cpuPer(b), userPer(a)/userPer(b), coreCell(fmt.Sprintf("%.2fx", corePer(a)/corePer(b))), a.P50/b.P50, a.P99/b.P99, statesPer(a)/statesPer(b), float64(a.ServerRSS)/float64(b.ServerRSS), cpuPerState(a)/cpuPerState(b))
}

func printRow(r result, best map[string]int) {
	if r.Err != "" {
		fmt.Printf("%7d  %-15s  %s\n", r.N, r.Target, r.Err)
		return
	}
	ok := r.P99 <= boundP99 && statesPer(r) >= boundStates
	if ok && r.N > best[r.Target] {
		best[r.Target] = r.N
	}
	fmt.Printf("%7d  %-15s  %14.1f  %10.1f%s  %8.1f  %8.1f  %9.2f  %9.1f  %11.1f  %5.0f%%  %v\n", r.N, r.Target, cpuPer(r), userPer(r), coreCell(fmt.Sprintf("%.1f", corePer(r))), r.P50, r.P99,
		statesPer(r), float64(r.ServerRSS)/(1<<20), cpuPerState(r), 100*r.LoadCPU/r.Seconds, ok)
}

func hasTarget(ts []string, t string) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func without(ts []string, t string) []string {
	var out []string
	for _, x := range ts {
		if x != t {
			out = append(out, x)
		}
	}
	return out
}

// colyseusReady checks node and npm, and installs the Colyseus server's
// packages from its lockfile when they are not there yet.
func colyseusReady(dir string) error {
	for _, p := range []string{"node", "npm"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s not on PATH", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "server.js")); err != nil {
		return fmt.Errorf("no server.js in %s (run from the repository's root, or set -colyseus-dir)", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@colyseus", "core")); err == nil {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--legacy-peer-deps")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

type runner struct {
	net                  *veth // nil on loopback
	self, before         string
	loadProfile          string
	serverCore, loadCore string
	colyDir              string
	warm, measure        time.Duration
	joinTimeout          time.Duration
}

// run starts target's server on its core, drives n players at it from
// the load generator on the other, and stops the server.
func (r runner) run(target string, n int, profile string) result {
	port, err := freePort()
	if err != nil {
		return result{Target: target, N: n, Err: err.Error()}
	}
	var srv *exec.Cmd
	switch target {
	case "muster", "before", "muster-bin", "muster-portable":
		bin := r.self
		if target == "before" {
			bin = r.before
		}
		args := []string{"-c", r.serverCore, bin, "-role", "muster-server", "-port", strconv.Itoa(port)}
		if r.net != nil { // a -before build may not know -host: on loopback it needs none
			args = append(args, "-host", r.net.host())
		}
		if target == "muster-bin" {
			args = append(args, "-binary")
		}
		if profile != "" {
			args = append(args, "-cpuprofile", profile)
		}
		srv = r.net.server("taskset", args...)
		srv.Env = append(os.Environ(), "GOMAXPROCS=1")
		if target == "muster-portable" {
			srv.Env = append(srv.Env, "MUSTER__ROOM__SOCKETS="+room.SocketsPortable)
		}
	case "colyseus":
		srv = r.net.server("taskset", "-c", r.serverCore, "node", "server.js", strconv.Itoa(port), r.net.host())
		srv.Dir = r.colyDir
		srv.Env = append(os.Environ(), "NODE_ENV=production")
	default:
		return result{Target: target, N: n, Err: "unknown framework"}
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return result{Target: target, N: n, Err: err.Error()}
	}
	defer stopServer(srv)
	// Across the pair the load generator's joins wait for the server.
	if r.net == nil {
		if err := waitPort(port, 20*time.Second); err != nil {
			return result{Target: target, N: n, Err: err.Error()}
		}
	}
	proto := target
	if target == "before" || target == "muster-portable" {
		proto = "muster"
	}
	args := []string{"-c", r.loadCore, r.self, "-role", "load", "-target", proto, "-host", r.net.host(), "-port", strconv.Itoa(port), "-server-core", r.serverCore,
		"-label", target, "-players", strconv.Itoa(n), "-server-pid", strconv.Itoa(srv.Process.Pid),
		"-warm", r.warm.String(), "-measure", r.measure.String(), "-join-timeout", r.joinTimeout.String()}
	if profile != "" {
		args = append(args, "-cpuprofile", profile)
	}
	if r.loadProfile != "" {
		args = append(args, "-load-cpuprofile", r.loadProfile)
	}
	load := r.net.load("taskset", args...)
	load.Env = append(os.Environ(), "GOMAXPROCS=1")
	load.Stderr = os.Stderr
	out, err := load.StdoutPipe()
	if err != nil {
		return result{Target: target, N: n, Err: err.Error()}
	}
	if err := load.Start(); err != nil {
		return result{Target: target, N: n, Err: err.Error()}
	}
	var res result
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if json.Unmarshal(sc.Bytes(), &res) == nil && res.Target != "" {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if err := load.Wait(); err != nil && res.Target == "" {
		return result{Target: target, N: n, Err: "load generator: " + err.Error()}
	}
	return res
}

// stopServer ends a server: SIGTERM, and SIGKILL if it has not exited
// within 10 s.
func stopServer(c *exec.Cmd) {
	c.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		c.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.Process.Kill()
		<-done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPort(port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("server did not listen within " + timeout.String())
}
