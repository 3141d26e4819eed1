// Command rooms measures the room host against the design it replaces (SPEC
// N1, N5), in one run:
//
//   - rooms: trivial rooms stepped at 60 Hz by room.Host's step workers,
//     and by a goroutine and a time.Ticker per room, at growing counts; for
//     each it prints the p99 lateness of a room's step after it was due, and
//     the largest count each design keeps under the 2 ms goal, with the
//     ratio;
//   - backplane 200 ms slow: rooms on a host bound to a fleet whose
//     backplane answers every call 200 ms late, while rooms end and
//     players leave, beside the same churn on a backplane that answers at
//     once; the host's lateness counts the steps a stalled worker owed.
//     On Linux each run also prints the share of CPU time the hypervisor
//     stole meanwhile: on a busy host, a virtual machine's CPUs are not
//     run for milliseconds at a time, and no program's steps are on time
//     then;
//   - memory: heap bytes per idle room, and per connected player (the
//     players connect from a child process, so only the server's side is
//     counted).
//
// Every run is bounded in rooms, players and time, and stops by itself.
//
//	go run ./bench/rooms
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/internal/testkit/benchgame"
	"github.com/muster-gg/muster/room"
)

const (
	rate   = 60
	period = time.Second / rate
	goal   = 2 * time.Millisecond
)

func main() {
	sizes := flag.String("sizes", "1000,2500,5000,10000,25000,50000,100000,150000,200000", "room counts to try")
	measure := flag.Duration("measure", 3*time.Second, "measuring time per run, after one second of warm-up")
	baseMax := flag.Int("baseline-max", 25000, "largest room count the baseline runs at: beyond it, its goroutines starve the program itself")
	players := flag.Int("players", 2000, "connected players for the memory figure (0 skips it)")
	slowRooms := flag.Int("slow-rooms", 10000, "rooms for the slow-backplane run (0 skips it)")
	slowDelay := flag.Duration("slow-delay", 200*time.Millisecond, "backplane delay of the slow-backplane run")
	churners := flag.Int("churners", 20, "goroutines ending rooms and unseating players, 20 times a second each")
	skipSizes := flag.Bool("skip-sizes", false, "skip the runs at growing counts")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the slow-backplane runs to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the slow-backplane runs to this file (samples every 4 KiB allocated)")
	role := flag.String("role", "", "internal: client")
	url := flag.String("url", "", "internal: server URL for -role client")
	flag.Parse()
	if *role == "client" {
		runClients(*url, *players)
		return
	}

	var ks []int
	for _, s := range strings.Split(*sizes, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k <= 0 {
			fmt.Fprintf(os.Stderr, "bad -sizes entry %q\n", s)
			os.Exit(2)
		}
		ks = append(ks, k)
	}
	if *slowRooms > 0 {
		stop := startProfiles(*cpuProfile, *memProfile)
		fmt.Printf("%d rooms at %d Hz while rooms end and players leave (%d churners), p99 lateness (goal < %v):\n", *slowRooms, rate, *churners, goal)
		fast, e1, l1, s1 := runChurn(*slowRooms, 0, *measure, *churners)
		slow, e2, l2, s2 := runChurn(*slowRooms, *slowDelay, *measure, *churners)
		fmt.Printf("  backplane at once:      %v (%d rooms ended, %d players left)%s\n", fast, e1, l1, note(s1))
		fmt.Printf("  backplane %v slow: %v (%d rooms ended, %d players left), ratio %.2fx%s\n\n", *slowDelay, slow, e2, l2, float64(slow)/float64(max(fast, 1)), note(s2))
		stop()
	}
	if *skipSizes {
		ks = nil
	}
	fmt.Printf("rooms at %d Hz, p99 lateness of a step after it was due (goal < %v); GOMAXPROCS=%d\n\n", rate, goal, runtime.GOMAXPROCS(0))
	fmt.Printf("%8s  %14s  %s\n", "rooms", "step workers", "goroutine+ticker")
	bestHost, bestBase := 0, 0
	baseDone := false
	for _, k := range ks {
		// Every size runs on the host, to show how lateness grows; the
		// baseline stops once it misses steps wholesale.
		p := runHost(k, *measure)
		if p < goal {
			bestHost = k
		}
		bp := "-"
		if !baseDone && k <= *baseMax {
			p, miss := runBaseline(k, *measure)
			bp = fmt.Sprintf("%v (%.1f%% missed)", p, 100*miss)
			if p < goal && miss < 0.001 {
				bestBase = k
			}
			baseDone = miss > 0.10
		}
		fmt.Printf("%8d  %14s  %s\n", k, p, bp)
	}
	fmt.Printf("\nlargest count under %v: step workers %d, goroutine+ticker %d", goal, bestHost, bestBase)
	if bestBase > 0 {
		fmt.Printf(", ratio %.1fx", float64(bestHost)/float64(bestBase))
	}
	fmt.Println()

	fmt.Printf("\nmemory: %.0f bytes per idle room\n", idleRoomBytes(100000))
	if *players > 0 {
		b, withStacks, err := playerBytes(*players)
		if err != nil {
			fmt.Println("memory per player:", err)
			return
		}
		fmt.Printf("memory: %.0f bytes per connected player (%d players); %.0f with its goroutines' stacks\n", b, *players, withStacks)
	}
}

// note puts s after a figure, if there is one.
func note(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

func newHost() *benchgame.Host {
	h, err := benchgame.NewHost(rate)
	if err != nil {
		panic(err)
	}
	return h
}

func runHost(k int, measure time.Duration) time.Duration {
	h, stop, err := benchgame.Start(rate, k)
	if err != nil {
		panic(err)
	}
	time.Sleep(time.Second)
	h.ResetLateness()
	time.Sleep(measure)
	p99, _ := h.Lateness(0.99)
	stop()
	runtime.GC()
	return p99
}

// runBaseline runs k rooms the way the host replaces: a goroutine with a
// time.Ticker each, started at a random phase of the period.
func runBaseline(k int, measure time.Duration) (time.Duration, float64) {
	const shards = 64
	var hist [shards]histogram
	var missed [shards]atomic.Int64
	var measuring atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() {
			phase := time.Duration(rand.Int64N(int64(period)))
			select {
			case <-time.After(phase):
			case <-ctx.Done():
				return
			}
			s := &benchgame.Count{}
			start := time.Now()
			benchgame.Every(ctx, period, func() bool {
				if measuring.Load() {
					// Late against the last time a step was due; steps the
					// ticker dropped are counted as missed.
					since := time.Since(start)
					due := since / period * period
					hist[i%shards].record(since - due)
					missed[i%shards].Add(int64(since/period) - int64(s.N) - 1)
				}
				s.N = uint64(time.Since(start) / period)
				return true
			})
		})
	}
	time.Sleep(time.Second)
	measuring.Store(true)
	time.Sleep(measure)
	measuring.Store(false)
	cancel()
	wg.Wait()
	var all histogram
	for i := range hist {
		for j := range all.b {
			all.b[j].Add(hist[i].b[j].Load())
		}
	}
	var miss int64
	for i := range missed {
		miss += missed[i].Load()
	}
	runtime.GC()
	return all.quantile(0.99), float64(miss) / (float64(k) * measure.Seconds() * rate)
}

// histogram counts durations in 25µs buckets up to 25ms, then 1ms
// buckets up to about 2s, as the host's lateness does.
type histogram struct{ b [1000 + 2000]atomic.Uint64 }

func bucketOf(d time.Duration) int {
	const fineTop = 1000 * 25 * time.Microsecond
	if d < fineTop {
		return max(0, int(d/(25*time.Microsecond)))
	}
	return min(1000+int((d-fineTop)/time.Millisecond), 2999)
}

func upper(i int) time.Duration {
	if i < 1000 {
		return time.Duration(i+1) * 25 * time.Microsecond
	}
	return 25*time.Millisecond + time.Duration(i-1000+1)*time.Millisecond
}

func (h *histogram) record(d time.Duration) { h.b[bucketOf(d)].Add(1) }

func (h *histogram) quantile(q float64) time.Duration {
	var total uint64
	for i := range h.b {
		total += h.b[i].Load()
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i := range h.b {
		seen += h.b[i].Load()
		if seen >= want && total > 0 {
			return upper(i)
		}
	}
	return upper(len(h.b) - 1)
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// idleRoomBytes opens n rooms with no players on a host that is not
// stepping, and returns the heap growth per room.
func idleRoomBytes(n int) float64 {
	h := newHost()
	before := heap()
	for range n {
		if _, err := h.OpenRoom(context.Background(), room.Info{}); err != nil {
			panic(err)
		}
	}
	after := heap()
	runtime.KeepAlive(h)
	return float64(after-before) / float64(n)
}
