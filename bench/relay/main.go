// Command relay measures the ?node= relay (SPEC N2): echo round trips per
// second and round-trip latency over a WebSocket (a) straight to the echo
// server, (b) through another server's relay, and (c) through nginx
// proxying to the same echo server, all in one run, and prints the ratios.
//
// The three paths are measured in short interleaved rounds, in a rotating
// order, so that a machine that gets slower or faster during the run affects
// all three alike; besides the pooled figures it prints the median of the
// per-round ratios, which a burst of load on a shared machine moves least,
// and their geometric mean with a 95% confidence interval, which says
// whether the run can tell the relay from nginx at all. Every round is
// bounded in time and in count.
//
//	go run ./bench/relay
//	go run ./bench/relay -conns 64 -size 1024 -duration 2s -rounds 5
//	go run ./bench/relay -rounds 40 -v   # a narrower interval, and every round's figures
//	go run ./bench/relay -relay-procs 1   # the relaying process on one P, as nginx on one worker
//	go run ./bench/relay -rooms 20000     # the relaying process also runs rooms and answers its own players (path "own")
//	go run ./bench/relay -rooms 20000 -players 20   # and 20 players of it send at 60 Hz throughout
//
// The client runs in this process; the relaying server a, the echo server b
// and nginx each run in their own process, as they would in a fleet. It
// needs nginx on PATH; everything listens on 127.0.0.1.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/relay"
)

func main() {
	var (
		conns    = flag.Int("conns", 32, "connections in the throughput scenario")
		size     = flag.Int("size", 128, "message size in bytes")
		duration = flag.Duration("duration", time.Second, "length of one measured round")
		rounds   = flag.Int("rounds", 10, "measured rounds per path and scenario")
		maxRT    = flag.Int64("max", 2_000_000, "most round trips in one round")
		only     = flag.String("only", "", "measure only this path (direct, relay or nginx), for profiling")
		verbose  = flag.Bool("v", false, "print every round's figures, to pool them over runs")
		procs    = flag.Int("relay-procs", 0, "GOMAXPROCS of the relaying process a (0: the Go default), to compare with nginx's one worker")
		cpuprof  = flag.String("cpuprofile", "", "write a CPU profile of the serving process to this file (with -serve)")
		players  = flag.Int("players", 0, "players connected straight to the relaying process throughout, each sending a message at 60 Hz; their p99 round trip is printed per path")
		rooms    = flag.Int("rooms", 0, "rooms the relaying process runs beside its relay, at 60 Hz; adds the path \"own\" (straight to that process) and prints the rooms' step lateness per path")
		serveID  = flag.String("serve", "", "internal: run as server `id` (a or b) in a child process")
		peer     = flag.String("peer", "", "internal: address of node b, for -serve a")
	)
	flag.Parse()
	log.SetFlags(0)
	if *serveID != "" {
		if err := serveChild(*serveID, *peer, *cpuprof, *rooms); err != nil {
			log.Fatal(err)
		}
		return
	}
	onlyPath = *only
	verboseRounds = *verbose
	relayProcs = *procs
	roomsInA = *rooms
	playersOfA = *players
	if err := run(*conns, *size, *duration, *rounds, *maxRT, *cpuprof); err != nil {
		log.Fatal(err)
	}
}

// path is one way from the client to the echo server.
type path struct {
	name string
	url  string
	// proxy lists the processes in the middle (the relaying server, or
	// nginx's master and workers); none for the direct path.
	proxy func() []int
}

// result is what the rounds of one path and scenario measured.
type result struct {
	rts  int64
	time time.Duration
	lat  []time.Duration
	cpu  time.Duration // CPU time used by the proxy processes
}

// cpuPerRT is the proxy's CPU time per round trip.
func (r result) cpuPerRT() time.Duration {
	if r.rts == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.rts)
}

func (r result) rate() float64 { return float64(r.rts) / r.time.Seconds() }

func (r result) pct(p int) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, len(r.lat)*p/100)]
}

// onlyPath, when set, restricts the run to one path.
var onlyPath string

// verboseRounds prints every round's figures.
var verboseRounds bool

func run(conns, size int, duration time.Duration, rounds int, maxRT int64, cpuprof string) error {
	nginxBin, err := exec.LookPath("nginx")
	if err != nil {
		return fmt.Errorf("nginx is not on PATH: %w", err)
	}
	// b is the echo server; a relays to it. Each runs in its own process,
	// as nginx does, so that no path shares a Go runtime with the client.
	bAddr, _, stopB, err := startChild("b", "", "")
	if err != nil {
		return err
	}
	defer stopB()
	aAddr, aPID, stopA, err := startChild("a", bAddr, cpuprof)
	if err != nil {
		return err
	}
	defer stopA()

	tmp, err := os.MkdirTemp("", "bench-relay-nginx-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	port, err := testbin.PickPort("127.0.0.1")
	if err != nil {
		return err
	}
	ngx, err := testbin.LaunchNginx(nginxBin, tmp, port, bAddr)
	if err != nil {
		return err
	}
	defer ngx.Stop()
	version, _ := exec.Command(nginxBin, "-v").CombinedOutput()

	paths := []path{
		{"direct", "ws://" + bAddr + "/echo", func() []int { return nil }},
		{"relay", "ws://" + aAddr + "/echo?node=b", func() []int { return []int{aPID} }},
		{"nginx", "ws://" + ngx.Addr + "/echo", func() []int { return append(childrenOf(ngx.PID()), ngx.PID()) }},
	}
	if roomsInA > 0 {
		// The relaying server's own players: how soon a server with rooms
		// answers them.
		paths = append(paths, path{"own", "ws://" + aAddr + "/echo", func() []int { return []int{aPID} }})
	}
	if onlyPath != "" {
		paths = slices.DeleteFunc(paths, func(p path) bool { return p.name != onlyPath })
		if len(paths) == 0 {
			return fmt.Errorf("no path %q", onlyPath)
		}
	}

	fmt.Printf("Echo of a %d-byte binary message; %d rounds of %v per path, interleaved; client, relay (a), echo server (b) and nginx (1 worker) in four processes; %s; %d CPUs; %s\n\n",
		size, rounds, duration, runtime.Version(), runtime.NumCPU(), strings.TrimSpace(strings.TrimPrefix(string(version), "nginx version: ")))

	ratios := onlyPath == "" // relay/nginx, with direct as the base
	pl, err := startPlayers("ws://"+aAddr+"/echo", playersOfA)
	if err != nil {
		return err
	}
	defer pl.stop()
	scenarios := []struct {
		name  string
		conns int
	}{
		{"1 connection, sequential round trips (latency)", 1},
		{fmt.Sprintf("%d connections, each sequential (throughput)", conns), conns},
	}
	for _, sc := range scenarios {
		res := make(map[string]*result)
		for _, p := range paths {
			// Warm up: connections, buffers, nginx's worker.
			if _, err := measure(p, sc.conns, size, duration/5, maxRT); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			res[p.name] = &result{}
		}
		var thrRatios, addedRatios, cpuRatios []float64 // relay/nginx, one per round
		late := make(map[string][]time.Duration)        // a's rooms' p99 step lateness, per path, one per round
		playerRT := make(map[string][]time.Duration)    // a's players' p99 round trip, per path, one per round
		for i := range rounds {
			this := make(map[string]result)
			for j := range paths {
				// Rotate the order, so no path always runs right after
				// another.
				p := paths[(i+j)%len(paths)]
				if roomsInA > 0 {
					if _, err := lateness(aAddr); err != nil { // forget the last round's
						return err
					}
				}
				pl.take() // forget the last round's
				r, err := measure(p, sc.conns, size, duration, maxRT)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				if rts := pl.take(); len(rts) > 0 {
					slices.Sort(rts)
					playerRT[p.name] = append(playerRT[p.name], rts[len(rts)*99/100])
				}
				if roomsInA > 0 {
					p99, err := lateness(aAddr)
					if err != nil {
						return err
					}
					late[p.name] = append(late[p.name], p99)
				}
				if verboseRounds {
					fmt.Printf("round %d, %d connections, %s: %.0f round trips/s, proxy CPU per round trip %v\n", i, sc.conns, p.name, r.rate(), r.cpuPerRT())
				}
				res[p.name].rts += r.rts
				res[p.name].time += r.time
				res[p.name].lat = append(res[p.name].lat, r.lat...)
				res[p.name].cpu += r.cpu
				slices.Sort(r.lat)
				this[p.name] = r
			}
			if ratios {
				rl, ng, di := this["relay"], this["nginx"], this["direct"]
				thrRatios = append(thrRatios, rl.rate()/ng.rate())
				addedRatios = append(addedRatios, float64(rl.pct(50)-di.pct(50))/float64(ng.pct(50)-di.pct(50)))
				cpuRatios = append(cpuRatios, float64(rl.cpuPerRT())/float64(ng.cpuPerRT()))
			}
		}
		fmt.Printf("%s\n\n", sc.name)
		fmt.Printf("| path | round trips/s | p50 | p99 | added p50 vs direct | proxy CPU per round trip |\n|---|---:|---:|---:|---:|---:|\n")
		for _, p := range paths {
			r := res[p.name]
			slices.Sort(r.lat)
			var added time.Duration
			if d, ok := res["direct"]; ok {
				added = r.pct(50) - d.pct(50)
			}
			fmt.Printf("| %s | %.0f | %v | %v | %v | %v |\n", p.name, r.rate(), round(r.pct(50)), round(r.pct(99)), round(added), round(r.cpuPerRT()))
		}
		if roomsInA > 0 {
			fmt.Printf("\n%d rooms in the relaying process, p99 step lateness per round, median [min–max]:", roomsInA)
			for _, p := range paths {
				fmt.Printf(" %s %s;", p.name, spreadDur(late[p.name]))
			}
			fmt.Println()
		}
		if playersOfA > 0 {
			fmt.Printf("%d players of the relaying process at 60 Hz, p99 round trip per round, median [min–max]:", playersOfA)
			for _, p := range paths {
				fmt.Printf(" %s %s;", p.name, spreadDur(playerRT[p.name]))
			}
			fmt.Println()
		}
		if !ratios {
			continue
		}
		rl, ng, di := res["relay"], res["nginx"], res["direct"]
		addedRelay := rl.pct(50) - di.pct(50)
		addedNginx := ng.pct(50) - di.pct(50)
		fmt.Printf("\nrelay/nginx, all rounds pooled: throughput %.2f×, p50 %.2f×, p99 %.2f×, added p50 %.2f×; relay/direct throughput %.2f×\n",
			rl.rate()/ng.rate(),
			float64(rl.pct(50))/float64(ng.pct(50)),
			float64(rl.pct(99))/float64(ng.pct(99)),
			float64(addedRelay)/float64(addedNginx),
			rl.rate()/di.rate())
		fmt.Printf("relay/nginx, median of %d rounds [min–max]: throughput %s, added p50 %s, proxy CPU per round trip %s\n",
			rounds, spread(thrRatios), spread(addedRatios), spread(cpuRatios))
		fmt.Printf("relay/nginx, geometric mean of the rounds' ratios (95%% interval): throughput %s, proxy CPU per round trip %s\n\n",
			interval(thrRatios), interval(cpuRatios))
	}
	var st relay.Stats
	if err := getJSON("http://"+aAddr+"/stats", &st); err != nil {
		return err
	}
	if st.Relayed == 0 || st.Fallbacks != 0 {
		return fmt.Errorf("relay did not relay: %+v", st)
	}
	return nil
}

// interval formats the geometric mean of xs, ratios above zero, and a 95%
// confidence interval for it, from Student's t on their logarithms: a ratio
// of 0.5 is as far from 1 as one of 2. The rounds differ with the state of
// the machine, which moves both paths of a round alike, so the interval
// says how far the run's figure can be trusted.
func interval(xs []float64) string {
	var logs []float64
	for _, x := range xs {
		if x > 0 && !math.IsInf(x, 0) {
			logs = append(logs, math.Log(x))
		}
	}
	n := len(logs)
	if n < 2 {
		return "–"
	}
	var sum, ss float64
	for _, l := range logs {
		sum += l
	}
	m := sum / float64(n)
	for _, l := range logs {
		ss += (l - m) * (l - m)
	}
	h := t975(n-1) * math.Sqrt(ss/float64(n-1)/float64(n))
	return fmt.Sprintf("%.3f× (%.3f–%.3f)", math.Exp(m), math.Exp(m-h), math.Exp(m+h))
}

// t975 is the 97.5th percentile of Student's t distribution with df degrees
// of freedom, from a table; between its rows it takes the smaller df's, a
// wider interval.
func t975(df int) float64 {
	table := [...]struct {
		df int
		t  float64
	}{{1, 12.706}, {2, 4.303}, {3, 3.182}, {4, 2.776}, {5, 2.571}, {6, 2.447}, {7, 2.365}, {8, 2.306},
		{9, 2.262}, {10, 2.228}, {12, 2.179}, {15, 2.131}, {20, 2.086}, {30, 2.042}, {60, 2.000}, {120, 1.980}}
	t := table[0].t
	for _, r := range table {
		if r.df <= df {
			t = r.t
		}
	}
	return t
}

// spread formats the median and range of xs.
func spread(xs []float64) string {
	slices.Sort(xs)
	return fmt.Sprintf("%.2f× [%.2f–%.2f]", xs[len(xs)/2], xs[0], xs[len(xs)-1])
}

// spreadDur formats the median and range of ds.
func spreadDur(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	slices.Sort(ds)
	return fmt.Sprintf("%v [%v–%v]", round(ds[len(ds)/2]), round(ds[0]), round(ds[len(ds)-1]))
}

// lateness returns the p99 lateness of the rooms' steps in the relaying
// process a since the last call.
func lateness(aAddr string) (time.Duration, error) {
	var d time.Duration
	err := getJSON("http://"+aAddr+"/lateness", &d)
	return d, err
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond || d <= -time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(100 * time.Nanosecond)
	}
}

// measure runs one round: conns connections each doing sequential echo
// round trips until duration has passed or maxRT round trips were done.
func measure(p path, conns, size int, duration time.Duration, maxRT int64) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), duration+30*time.Second)
	defer cancel()
	cs := make([]*websocket.Conn, conns)
	defer func() {
		for _, c := range cs {
			if c != nil {
				_ = c.Close(websocket.StatusNormalClosure, "")
			}
		}
	}()
	for i := range cs {
		c, _, err := websocket.Dial(ctx, p.url, nil)
		if err != nil {
			return result{}, err
		}
		c.SetReadLimit(-1)
		cs[i] = c
	}
	var (
		count atomic.Int64
		wg    sync.WaitGroup
		lats  = make([][]time.Duration, conns)
		errs  = make([]error, conns)
	)
	msg := make([]byte, size)
	pids := p.proxy()
	cpu0 := cpuTime(pids)
	start := time.Now()
	deadline := start.Add(duration)
	for i, c := range cs {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1<<14)
			for time.Now().Before(deadline) && count.Add(1) <= maxRT {
				t0 := time.Now()
				if err := c.Write(ctx, websocket.MessageBinary, msg); err != nil {
					errs[i] = err
					return
				}
				if _, _, err := c.Read(ctx); err != nil {
					errs[i] = err
					return
				}
				lat = append(lat, time.Since(t0))
			}
			lats[i] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime(pids) - cpu0
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	var r result
	for _, l := range lats {
		r.lat = append(r.lat, l...)
	}
	r.rts = int64(len(r.lat))
	r.time = elapsed
	r.cpu = cpu
	return r, nil
}

// relayProcs is the GOMAXPROCS of the relaying process; 0 leaves Go's
// default.
var relayProcs int

// roomsInA is how many rooms the relaying process runs beside its relay.
var roomsInA int

// playersOfA is how many players connect straight to the relaying process.
var playersOfA int

// startChild runs this program as server id in a child process and returns
// its address and a function that stops it.
func startChild(id, peer, cpuprof string) (addr string, pid int, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(exe, "-serve", id, "-peer", peer, "-cpuprofile", cpuprof)
	if id == "a" {
		cmd.Args = append(cmd.Args, "-rooms", strconv.Itoa(roomsInA))
	}
	cmd.Stderr = os.Stderr
	if id == "a" && relayProcs > 0 {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(relayProcs))
	}
	cmd.SysProcAttr = testbin.ChildAttr(false)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", 0, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop = func() {
		_ = stdin.Close() // the child exits when its stdin closes
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("server %s: %w", id, err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid, stop, nil
}

// serveChild is the child process: server id, the relay in front of an echo
// handler (and /stats), on a loopback port that it prints, until its stdin
// closes. With rooms, it also runs that many rooms, and /lateness answers
// their p99 step lateness since the last time it was asked.
func serveChild(id, peer, cpuprof string, rooms int) error {
	if cpuprof != "" && id == "a" {
		f, err := os.Create(cpuprof)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	dir := relay.DirectoryFunc(func(node string) (string, bool) { return peer, node == "b" && peer != "" })
	rl, err := relay.New(relay.Config{NodeID: id, Secret: "benchmark secret, 32 bytes long!"}, dir, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(rl.Stats())
	})
	if rooms > 0 {
		h, stop, err := runRooms(rooms)
		if err != nil {
			return err
		}
		defer stop()
		mux.HandleFunc("/lateness", func(w http.ResponseWriter, r *http.Request) {
			p99, _ := h.Lateness(0.99)
			h.ResetLateness()
			_ = json.NewEncoder(w).Encode(p99)
		})
	}
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(-1)
		ctx := context.Background()
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, b); err != nil {
				return
			}
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rl.Middleware(mux), ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(l) }()
	fmt.Println(l.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = rl.Close()
	return srv.Close()
}

// cpuTime returns the user and system CPU time the processes have used,
// all threads included, from /proc (resolution: one clock tick).
func cpuTime(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * time.Second / clockTicks
	}
	return total
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on Linux.
const clockTicks = 100

// childrenOf returns the ids of the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
