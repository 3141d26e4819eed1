package room

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quietLog = slog.New(slog.DiscardHandler)

// counter is a test game: each room sums its players' inputs into a
// running total and records one line per step.
type counter struct {
	mu     sync.Mutex
	log    map[string][]string        // room → lines
	passes map[string][]time.Duration // room → time of each pass since start
	start  time.Time
	onStep func(r *Room[*csim, int, *cplayer])
}

type csim struct {
	total int
}

type cplayer struct{ id string }

func newCounter() *counter {
	return &counter{log: map[string][]string{}, passes: map[string][]time.Duration{}, start: time.Now()}
}

func (g *counter) NewSim(Info) *csim { return &csim{} }
func (g *counter) Join(r *Room[*csim, int, *cplayer], id string) *cplayer {
	g.record(r, "join "+id)
	return &cplayer{id: id}
}
func (g *counter) Leave(r *Room[*csim, int, *cplayer], p *cplayer) { g.record(r, "leave "+p.id) }
func (g *counter) Input(r *Room[*csim, int, *cplayer], p *cplayer, in int) {
	r.Sim().total += in
	g.record(r, fmt.Sprintf("input %s %d", p.id, in))
}
func (g *counter) FixedStep(r *Room[*csim, int, *cplayer]) {
	if g.onStep != nil {
		g.onStep(r)
	}
	g.record(r, fmt.Sprintf("step %d total %d", r.Step(), r.Sim().total))
}
func (g *counter) AfterSteps(r *Room[*csim, int, *cplayer]) {
	g.mu.Lock()
	g.passes[r.ID()] = append(g.passes[r.ID()], time.Since(g.start))
	g.mu.Unlock()
}

func (g *counter) record(r *Room[*csim, int, *cplayer], line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.log[r.ID()] = append(g.log[r.ID()], line)
}

func (g *counter) lines(room string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.log[room])
}

// newHost returns a host of g with cfg that logs nothing, failing the
// test if New refuses them.
func newHost(t testing.TB, g Game[*csim, int, *cplayer], cfg Config) *Host[*csim, int, *cplayer] {
	t.Helper()
	h, err := New(g, cfg, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// runHost runs h until the test ends and returns once Run has begun.
func runHost[S, I, P any](t *testing.T, h *Host[S, I, P]) {
	t.Helper()
	testrun.GoRun(t, h.Run)
	<-h.Started()
}

// newServer serves h's handler on a test server until the test ends.
func newServer[S, I, P any](t *testing.T, h *Host[S, I, P]) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// playAlone runs h, serves it, opens room "r" for player p1 and connects
// p1, who is welcomed back into it.
func playAlone[S, I, P any](t *testing.T, h *Host[S, I, P]) *playtest.Conn {
	t.Helper()
	runHost(t, h)
	srv := newServer(t, h)
	if _, err := h.OpenRoom(t.Context(), Info{ID: "r", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	c := playtest.DialPlayer(t, srv.URL, h.Tickets(), "p1", "")
	c.Welcome("rejoin")
	return c
}

func TestStepsAtFixedRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newCounter()
		h, err := New(g, Config{Rate: 60, Workers: 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runHost(t, h)
		if _, err := h.OpenRoom(t.Context(), Info{ID: "a", Players: []string{"p1"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		steps := 0
		for _, l := range g.lines("a") {
			if strings.HasPrefix(l, "step ") {
				steps++
			}
		}
		if steps != 60 {
			t.Fatalf("%d steps in one second at 60 Hz", steps)
		}
		if g.lines("a")[0] != "join p1" {
			t.Fatalf("first event %q, want the join before the first step", g.lines("a")[0])
		}
	})
}

// runScripted runs 50 rooms for 2 seconds with inputs sent at fixed times
// and returns every room's log.
func runScripted(t *testing.T, workers int) map[string][]string {
	var out map[string][]string
	synctest.Test(t, func(t *testing.T) {
		g := newCounter()
		h, err := New(g, Config{Rate: 60, Workers: workers}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runHost(t, h)
		var rooms []*Room[*csim, int, *cplayer]
		for i := range 50 {
			r, err := h.OpenRoom(t.Context(), Info{ID: fmt.Sprintf("r%02d", i), Players: []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}})
			if err != nil {
				t.Fatal(err)
			}
			rooms = append(rooms, r)
		}
		period := time.Second / 60
		for tick := range 120 {
			time.Sleep(period / 2) // between two ticks
			for i, r := range rooms {
				if (tick+i)%3 == 0 {
					r.push(event[int]{kind: evInput, id: fmt.Sprintf("a%d", i), input: tick})
					r.push(event[int]{kind: evInput, id: fmt.Sprintf("b%d", i), input: i})
				}
			}
			time.Sleep(period - period/2)
		}
		synctest.Wait()
		out = g.log
	})
	return out
}

func TestWorkersAreDeterministic(t *testing.T) {
	one := runScripted(t, 1)
	four := runScripted(t, 4)
	if len(one) != 50 {
		t.Fatalf("%d rooms logged", len(one))
	}
	for id, want := range one {
		if got := four[id]; !slices.Equal(got, want) {
			t.Fatalf("room %s: 4 workers logged %d lines, 1 worker %d; first difference at %d", id, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestPanickingRoomEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newCounter()
		g.onStep = func(r *Room[*csim, int, *cplayer]) {
			if r.ID() == "bad" && r.Step() == 10 {
				panic("game bug")
			}
		}
		h := newHost(t, g, Config{Workers: 2})
		runHost(t, h)
		for _, id := range []string{"bad", "good1", "good2"} {
			if _, err := h.OpenRoom(t.Context(), Info{ID: id, Players: []string{"p-" + id}}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if _, ok := h.Room("bad"); ok || h.RoomOf("p-bad") != "" {
			t.Fatal("panicking room still runs")
		}
		if h.Rooms() != 2 {
			t.Fatalf("%d rooms run after one panicked, want 2", h.Rooms())
		}
		if n := len(g.lines("good1")); n < 59 {
			t.Fatalf("good room logged only %d lines", n)
		}
	})
}

func TestSlowRoomDelaysNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newCounter()
		period := time.Second / 60
		g.onStep = func(r *Room[*csim, int, *cplayer]) {
			if r.ID() == "slow" && r.Step()%20 == 0 {
				time.Sleep(5 * period) // a step that takes five ticks
			}
		}
		h, err := New(g, Config{Workers: 4}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runHost(t, h)
		for i := range 40 {
			id := fmt.Sprintf("r%02d", i)
			if i == 7 {
				id = "slow"
			}
			if _, err := h.OpenRoom(t.Context(), Info{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		g.mu.Lock()
		defer g.mu.Unlock()
		for id, at := range g.passes {
			if id == "slow" {
				continue
			}
			for i := 1; i < len(at); i++ {
				if gap := at[i] - at[i-1]; gap > 2*period {
					t.Fatalf("room %s waited %v between passes (more than one tick late) while another room was slow", id, gap)
				}
			}
		}
		if len(g.passes["slow"]) == 0 {
			t.Fatal("slow room never ran")
		}
	})
}

// weighty is the counter game with a Loader: a room weighs 10.
type weighty struct{ *counter }

func (weighty) LoadOf(*csim) int { return 10 }

// A new room counts in the host's load from the moment it opens (by its
// seats, until its first pass asks the game), so that a module filling
// the server does not overshoot its max-load.
func TestNewRoomLoadCountsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := New[*csim, int, *cplayer](weighty{newCounter()}, Config{Rate: 60}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runHost(t, h)
		if _, err := h.OpenRoom(t.Context(), Info{ID: "a", Players: []string{"p1", "p2"}}); err != nil {
			t.Fatal(err)
		}
		if got := h.Load(); got != 2 {
			t.Errorf("load %d right after opening a room of 2, want 2", got)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if got := h.Load(); got != 10 {
			t.Errorf("load %d after the room's first passes, want the game's 10", got)
		}
	})
}

func TestDt(t *testing.T) {
	h := newHost(t, newCounter(), Config{Rate: 50})
	r, err := h.OpenRoom(t.Context(), Info{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Dt() != 20*time.Millisecond {
		t.Fatalf("Dt %v at 50 Hz", r.Dt())
	}
}
