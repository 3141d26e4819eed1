// Command controlplane measures what a fleet costs its Redis (SPEC N3, B7):
// for K simulated servers it reports Redis commands, bytes in and out and
// CPU per second, the round trips and latency of one heartbeat, and how
// each figure grows from one K to the next.
//
// For each design and each K it starts a fresh redis-server (no
// persistence, a free loopback port), runs K real fleet.Fleet instances in
// this process, each with its own Run loop and its own go-redis client
// with a small pool, as K server processes would have (one shared client
// would funnel the K servers' calls through a few busy connections, which
// makes each call cheaper for Redis than a real fleet makes it), starts
// them spread over one heartbeat, and drives each with the workload
// described in sim.go. Once every server is ready and one more heartbeat
// has passed it samples Redis INFO, waits -duration, and samples again:
// the table is the difference. Then it stops every fleet (each leaves the
// cluster and its Run returns), closes the clients and kills the
// redis-server.
//
// The designs, measured in one run so that they can be compared:
//
//   - memberset: the baseline, the view as backplane/redis first kept it
//     (memberset.go). Each heartbeat is one Lua script that writes the
//     record and returns every live record.
//   - delta: backplane/redis as it is, the versioned view (view.go there).
//     Each heartbeat returns only the records changed since the caller's
//     last read; servers publish their exact load.
//   - delta+steps: the versioned view, and each server publishes its load
//     only when it has moved 5% of max-load (fleet.Config.LoadStep's
//     default), so that records change less often than every heartbeat.
//   - delta+steps+batched: the library as it is: delta+steps, and the
//     player events' calls batched (an arrival is one call, a room's
//     claims and releases one call each; see sim.go). The designs before
//     it make one call per player, as the library did before.
//
// The simulated servers share this machine's cores with Redis, and 1,000
// of them at the full rate need more CPU (their own round trips and
// timers, about 1.4 cores here) than a small machine can spare beside
// Redis. -slowdown runs a size with time stretched: heartbeat and workload
// N times slower, and every per-second figure multiplied by N. Redis's
// work per heartbeat and per operation does not depend on the rate, but
// its overhead per request does: a slower run leaves Redis idle between
// requests, so that each one pays for a wake-up and cold caches, and the
// scaled figures overstate the full rate's (at K = 1,000 here, Redis CPU
// per round trip was 36µs at ×1, 43µs at ×2, 47µs at ×3 and 56µs at ×6).
// A simulator short of CPU understates it instead, bunching its calls.
// The default, ×2 at K = 1,000, is the smallest slowdown at which the
// simulated servers' heartbeat p99 stays in milliseconds on a 2-core
// machine; the latencies are those of the slower run. For the same reason
// the calls' timeout (-timeout) defaults to 3/4 of the heartbeat rather
// than the fleet's 1/4, so that a simulator short of CPU does not turn its
// own delays into timeouts and reconnections. "kept up" says whether the
// servers made their heartbeats; "simulator CPU" and "other CPU" how busy
// this process and the rest of the machine were.
//
// Usage:
//
//	go run ./bench/controlplane
//	go run ./bench/controlplane -sizes 10,100,1000 -duration 5s -heartbeat 2s -slowdown 1000=2
//	go run ./bench/controlplane -sizes 1000 -ops=false   # the view's cost alone
//
// It needs redis-server on PATH.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
)

// design is one way of keeping the fleet's view, measured in turn.
type design struct {
	name    string
	open    func(rdb goredis.UniversalClient, cluster string) (backplane.Backplane, error)
	steps   bool // servers publish their load in steps of loadStep
	batched bool // an arrival is one call, a room's claims one call (sim.go)
}

var designs = []design{
	{name: "memberset", open: newMemberSet},
	{name: "delta", open: openRedis},
	{name: "delta+steps", open: openRedis, steps: true},
	{name: "delta+steps+batched", open: openRedis, steps: true, batched: true},
}

// openRedis is backplane/redis as it is: the versioned view.
func openRedis(rdb goredis.UniversalClient, cluster string) (backplane.Backplane, error) {
	return redis.New(rdb, cluster)
}

// options is what the flags ask for.
type options struct {
	sizes     []int
	designs   []design
	duration  time.Duration // measured window per design and size
	heartbeat time.Duration
	timeout   time.Duration // fleet call timeout and Redis socket timeouts
	slowdown  map[int]int   // K → how many times slower that size runs
	ops       bool          // servers make claims, locates and handoffs
}

func main() {
	var (
		sizes     = flag.String("sizes", "10,100,1000", "fleet sizes to measure, comma-separated")
		names     = flag.String("designs", "memberset,delta,delta+steps,delta+steps+batched", "designs to measure, comma-separated")
		duration  = flag.Duration("duration", 5*time.Second, "window measured per design and fleet size")
		heartbeat = flag.Duration("heartbeat", 2*time.Second, "fleet heartbeat interval")
		timeout   = flag.Duration("timeout", 0, "fleet call timeout and Redis socket timeouts (default 3/4 of the heartbeat)")
		slowdown  = flag.String("slowdown", "1000=2", "K=N,...: run fleet size K N times slower and scale its figures back")
		ops       = flag.Bool("ops", true, "make claims, locates and handoffs; false: servers only heartbeat, to isolate the view's cost")
		cpuprof   = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	)
	flag.Parse()
	o, err := parse(*sizes, *names, *slowdown)
	if err == nil && *timeout == 0 {
		*timeout = *heartbeat * 3 / 4
	}
	o.duration, o.heartbeat, o.timeout, o.ops = *duration, *heartbeat, *timeout, *ops
	if err == nil && (o.duration <= 0 || o.heartbeat <= 0 || o.timeout <= 0 || o.timeout >= o.heartbeat) {
		err = fmt.Errorf("-duration and -heartbeat must be positive, and -timeout between 0 and the heartbeat")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(2)
	}
	goredis.SetLogger(quiet{}) // a failed dial also fails a call, which the meter counts
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = profile(*cpuprof, func() error { return run(ctx, os.Stdout, o) })
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func parse(sizes, names, slowdown string) (options, error) {
	o := options{slowdown: map[int]int{}}
	for s := range strings.SplitSeq(sizes, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 2 {
			return o, fmt.Errorf("-sizes: %q is not a fleet size of at least 2", s)
		}
		o.sizes = append(o.sizes, k)
	}
	for name := range strings.SplitSeq(names, ",") {
		i := slices.IndexFunc(designs, func(d design) bool { return d.name == strings.TrimSpace(name) })
		if i < 0 {
			return o, fmt.Errorf("-designs: unknown design %q", name)
		}
		o.designs = append(o.designs, designs[i])
	}
	for kv := range strings.SplitSeq(slowdown, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		ks, ns, _ := strings.Cut(kv, "=")
		k, err1 := strconv.Atoi(strings.TrimSpace(ks))
		n, err2 := strconv.Atoi(strings.TrimSpace(ns))
		if err1 != nil || err2 != nil || n < 1 {
			return o, fmt.Errorf("-slowdown: %q is not K=N with N at least 1", kv)
		}
		o.slowdown[k] = n
	}
	return o, nil
}

// profile runs fn, with a CPU profile written to path unless it is "".
func profile(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return fn()
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func run(ctx context.Context, w io.Writer, o options) error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return err
	}
	if err := checkFiles(o.sizes); err != nil {
		return err
	}
	began := time.Now()
	var rows []result
	for _, d := range o.designs {
		for _, k := range o.sizes {
			slow := max(1, o.slowdown[k])
			fmt.Fprintf(os.Stderr, "%s, K=%d, %d× slower: measuring for %v...\n", d.name, k, slow, o.duration)
			r, err := measure(ctx, bin, d, k, slow, o)
			if err != nil {
				return fmt.Errorf("%s, K=%d: %w", d.name, k, err)
			}
			rows = append(rows, r)
		}
	}
	version, _ := exec.Command(bin, "--version").Output()
	workload := "claims, locates and handoffs"
	if !o.ops {
		workload = "heartbeats only"
	}
	fmt.Fprintf(w, "%s; heartbeat %v; call timeout %v; %s; window %v per design and size; %d cores; whole run %v\n\n",
		strings.TrimSpace(string(version)), o.heartbeat, o.timeout, workload, o.duration, runtime.NumCPU(), time.Since(began).Round(time.Second))
	printTables(w, rows)
	return nil
}
