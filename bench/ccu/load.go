//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/muster-gg/muster/internal/testkit/cputime"
)

// period is the rate of inputs and of states: 20 a second.
const period = 50 * time.Millisecond

// protocol is one framework's side of a player: how it joins a room of
// two, what an input is on the wire, and how a state shows the input.
type protocol interface {
	// join takes player i from nothing to queued (or seated) in a room
	// of two, and returns its connection.
	join(hc *http.Client, addr string, i int) (*wsConn, error)
	// input appends the payload of an input that sets the player's
	// position to (v, v).
	input(b []byte, v uint32) []byte
	// op is the WebSocket opcode of an input.
	op() byte
	// isState reports whether a message is a state.
	isState(msg []byte) bool
	// shows reports whether the state msg holds the position v.
	shows(msg []byte, v uint32, scratch []byte) bool
}

// result is what a load run reports: the orchestrator prints it.
type result struct {
	Target     string  `json:"target"`
	N          int     `json:"n"`
	Joined     int     `json:"joined"`  // connected and in a room (a state came)
	Seconds    float64 `json:"seconds"` // the measuring window
	ServerCPU  float64 `json:"server_cpu_s"`
	ServerUser float64 `json:"server_user_s"` // of ServerCPU, in user space
	CoreBusy   float64 `json:"core_busy_s"`   // the server's core, busy with anything, its receive work included
	ServerRSS  int64   `json:"server_rss_bytes"`
	LoadCPU    float64 `json:"load_cpu_s"`
	States     int64   `json:"states"`
	Latencies  int     `json:"latencies"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
	Unanswered int64   `json:"unanswered"` // inputs no state showed within the window
	Err        string  `json:"error,omitempty"`
}

// sent is an input in flight: its value and when it was written.
type sent struct {
	v  uint32
	at int64 // ns since base
}

type player struct {
	i  int
	ws *wsConn

	mu      sync.Mutex
	pending []sent // oldest first
	lat     []int64

	joined atomic.Bool
	states atomic.Int64
	lost   atomic.Int64

	// The reader's only (a tickReader, or read).
	scratch []byte
	in      []byte // bytes read, not yet a whole frame (tickReader)
	msg     []byte // the fragments of a message (tickReader)
	done    bool   // the connection ended (tickReader)
}

var base = time.Now()

func since() int64 { return int64(time.Since(base)) }

// window is the measuring window, in ns since base; 0 before it starts.
var winStart, winEnd atomic.Int64

func inWindow(t int64) bool {
	s, e := winStart.Load(), winEnd.Load()
	return s != 0 && t >= s && (e == 0 || t < e)
}

// runLoad drives n players of target against addr, and prints one JSON
// result line.
func runLoad(target, label, addr string, n int, warm, measure, joinTimeout time.Duration, serverPID int, serverCore string, profile bool, loadProfile string) {
	var proto protocol
	switch target {
	case "muster":
		proto = musterProto{}
	case "muster-bin":
		proto = musterBinProto{}
	case "colyseus":
		proto = colyseusProto{}
	default:
		fmt.Fprintln(os.Stderr, "unknown target", target)
		os.Exit(2)
	}
	res := result{Target: target, N: n}
	if label != "" {
		res.Target = label
	}
	defer func() {
		json.NewEncoder(os.Stdout).Encode(res)
	}()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	reader := newTickReader(proto)
	players := make([]*player, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	var joinErr atomic.Value
	deadline := time.Now().Add(joinTimeout)
	for i := range players {
		p := &player{i: i}
		players[i] = p
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			for time.Now().Before(deadline) {
				ws, err := proto.join(hc, addr, i)
				if err != nil {
					joinErr.Store(err.Error())
					time.Sleep(50 * time.Millisecond)
					continue
				}
				p.ws = ws
				if !reader.add(p) {
					go p.read(proto)
				}
				return
			}
		})
	}
	wg.Wait()
	// Every player seated gets states; a lone player of an odd count
	// too, on both frameworks, so all n are waited for.
	for time.Now().Before(deadline) && countJoined(players) < n {
		time.Sleep(20 * time.Millisecond)
	}
	res.Joined = countJoined(players)
	if res.Joined < n {
		res.Err = fmt.Sprintf("only %d of %d players got a state within %v", res.Joined, n, joinTimeout)
		if e, ok := joinErr.Load().(string); ok {
			res.Err += " (last join error: " + e + ")"
		}
		return
	}
	stop := make(chan struct{})
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		send(players, proto, stop)
	}()
	time.Sleep(warm)

	cpu0, core0 := cputime.Process(), coreBusy(serverCore)
	su0, ss0 := procTimes(serverPID)
	if profile {
		syscall.Kill(serverPID, syscall.SIGUSR1)
	}
	if loadProfile != "" {
		if f, err := os.Create(loadProfile); err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	t0 := time.Now()
	winStart.Store(since())
	time.Sleep(measure)
	winEnd.Store(since())
	res.Seconds = time.Since(t0).Seconds()
	su1, ss1 := procTimes(serverPID)
	res.LoadCPU, res.ServerCPU, res.ServerUser = (cputime.Process() - cpu0).Seconds(), su1+ss1-su0-ss0, su1-su0
	res.CoreBusy = coreBusy(serverCore) - core0
	if profile {
		syscall.Kill(serverPID, syscall.SIGUSR1)
	}
	res.ServerRSS = procRSS(serverPID)
	// Let the inputs of the window's last step be answered.
	time.Sleep(3 * period)
	close(stop)
	<-sendDone

	var all []int64
	for _, p := range players {
		p.mu.Lock()
		all = append(all, p.lat...)
		for _, s := range p.pending {
			if inWindow(s.at) {
				res.Unanswered++
			}
		}
		p.mu.Unlock()
		res.States += p.states.Load()
		res.Unanswered += p.lost.Load()
	}
	slices.Sort(all)
	res.Latencies = len(all)
	if len(all) > 0 {
		res.P50 = float64(all[len(all)/2]) / 1e6
		res.P99 = float64(all[len(all)*99/100]) / 1e6
	}
}

func countJoined(ps []*player) int {
	n := 0
	for _, p := range ps {
		if p.joined.Load() {
			n++
		}
	}
	return n
}

// send writes every player's input once a period, the players spread
// evenly over it. Each input sets the player's position to a value of
// its own (the player's index and a sequence number), which the states
// then show.
func send(players []*player, proto protocol, stop <-chan struct{}) {
	n := len(players)
	start := time.Now()
	var buf []byte
	for round := 1; ; round++ {
		select {
		case <-stop:
			return
		default:
		}
		for i, p := range players {
			due := start.Add(time.Duration(round-1)*period + time.Duration(i)*period/time.Duration(n))
			if d := time.Until(due); d > 200*time.Microsecond {
				time.Sleep(d)
			}
			v := uint32(i)<<16 | uint32(round&0xFFFF)
			buf = proto.input(buf[:0], v)
			p.mu.Lock()
			if len(p.pending) == 32 { // no state came for 32 inputs
				if inWindow(p.pending[0].at) {
					p.lost.Add(1)
				}
				p.pending = p.pending[1:]
			}
			p.pending = append(p.pending, sent{v: v, at: since()})
			p.mu.Unlock()
			p.ws.write(proto.op(), buf)
		}
	}
}

// read reads the player's messages until its connection ends, on a
// goroutine of its own (where no tickReader took it).
func (p *player) read(proto protocol) {
	for {
		_, msg, err := p.ws.read()
		if err != nil {
			return
		}
		p.handle(proto, msg)
	}
}

// handle takes one of the player's messages: a state counts, and answers
// the inputs it shows and every one before them.
func (p *player) handle(proto protocol, msg []byte) {
	if !proto.isState(msg) {
		return
	}
	now := since()
	p.joined.Store(true)
	if inWindow(now) {
		p.states.Add(1)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := len(p.pending) - 1; k >= 0; k-- {
		if !proto.shows(msg, p.pending[k].v, p.scratch) {
			continue
		}
		for _, s := range p.pending[:k+1] {
			if inWindow(s.at) && inWindow(now) {
				p.lat = append(p.lat, now-s.at)
			}
		}
		p.pending = append(p.pending[:0], p.pending[k+1:]...)
		return
	}
}
