package main

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/internal/testkit/cputime"
)

// result is what one design measured at one fleet size.
type result struct {
	design     design
	k          int
	slow       int // the size ran this many times slower
	window     time.Duration
	redis      redisCounters // deltas over the window
	sim        counts        // deltas over the window
	lat        []time.Duration
	simCPU     time.Duration // this process
	otherCPU   time.Duration // everything on the machine but this process and Redis
	firstErr   error
	clients    int64   // Redis connections at the end of the window
	expectedHB float64 // heartbeats per second at the full rate: K / heartbeat
}

// measure runs k servers of design d, slow times slower than o asks, and
// returns what the window measured.
func measure(ctx context.Context, bin string, d design, k, slow int, o options) (result, error) {
	heartbeat := o.heartbeat * time.Duration(slow)
	srv, err := startRedis(bin)
	if err != nil {
		return result{}, err
	}
	defer srv.stop()
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer admin.Close()

	s, err := newSim(d, k, srv.Addr, heartbeat, workloadTick*time.Duration(slow), o.timeout, o.ops)
	if err != nil {
		return result{}, err
	}
	defer s.close()
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // before the clients close and Redis stops
	defer cancel()

	start := time.Now()
	for i, srv := range s.servers {
		if err := sleep(ctx, time.Until(start.Add(heartbeat*time.Duration(i)/time.Duration(k)))); err != nil {
			return result{}, err
		}
		wg.Go(func() { s.serve(runCtx, srv) })
	}
	// Warm up until every server is ready, and then for one heartbeat: by
	// then every server has read the view since the last one joined, so
	// that what the window sees is the steady state.
	ready := make(chan struct{})
	wg.Go(func() { s.ready.Wait(); close(ready) }) // servers get ready even when cancelled
	select {
	case <-ready:
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
	if err := sleep(ctx, heartbeat); err != nil {
		return result{}, err
	}

	before, err := sampleRedis(ctx, admin)
	if err != nil {
		return result{}, err
	}
	simBefore, cpuBefore, machineBefore := s.m.snapshot(), cputime.Process(), machineCPU()
	s.m.measuring.Store(true)
	if err := sleep(ctx, o.duration); err != nil {
		return result{}, err
	}
	s.m.measuring.Store(false)
	after, err := sampleRedis(ctx, admin)
	if err != nil {
		return result{}, err
	}
	simAfter, cpuAfter, machineAfter := s.m.snapshot(), cputime.Process(), machineCPU()

	redisCPU := after.cpu - before.cpu
	byCommand := make(map[string]commandStat)
	for name, a := range after.byCommand {
		b := before.byCommand[name]
		if d := (commandStat{calls: a.calls - b.calls, usec: a.usec - b.usec}); d.calls > 0 {
			byCommand[name] = d
		}
	}
	simCPU := cpuAfter - cpuBefore
	return result{
		design: d,
		k:      k,
		slow:   slow,
		window: after.at.Sub(before.at),
		redis: redisCounters{
			commands:  after.commands - before.commands,
			netIn:     after.netIn - before.netIn,
			netOut:    after.netOut - before.netOut,
			cpu:       redisCPU,
			byCommand: byCommand,
		},
		sim:        simAfter.sub(simBefore),
		lat:        s.m.latencies(),
		simCPU:     simCPU,
		otherCPU:   max(0, machineAfter-machineBefore-simCPU-time.Duration(redisCPU*float64(time.Second))),
		firstErr:   s.m.err(),
		clients:    after.connections,
		expectedHB: float64(k) / o.heartbeat.Seconds(),
	}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// machineCPU returns the CPU time every core of the machine has spent busy,
// from /proc/stat (0 where there is none).
func machineCPU() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	// cpu user nice system idle iowait irq softirq steal ...
	fields := strings.Fields(sc.Text())
	var busy int64
	for i, field := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is counted in user already
			break
		}
		n, _ := strconv.ParseInt(field, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / 100 // USER_HZ is 100 on Linux
}
