package room

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// blackhole is a backplane whose calls that reach the store (Heartbeat,
// Leave, Claim, Release, Arrive, PutHandoff, Increment), once cut, wait
// for their context (or for the cut to end) like a Redis that stopped
// answering.
type blackhole struct {
	backplane.Backplane
	mu    sync.Mutex
	open  chan struct{} // closed while calls go through
	calls atomic.Int64  // calls that waited
}

func newBlackhole() *blackhole {
	b := &blackhole{open: make(chan struct{})}
	close(b.open)
	b.Backplane = backplane.Wrap(memory.New(), backplane.Hooks{Before: b.wait})
	return b
}

// cut makes calls hang (true) or go through again (false).
func (b *blackhole) cut(cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.open:
		if cut {
			b.open = make(chan struct{})
		}
	default:
		if !cut {
			close(b.open)
		}
	}
}

// wait is the Before hook: a call of op waits while the blackhole is cut.
func (b *blackhole) wait(ctx context.Context, op backplane.Op) error {
	switch op {
	case backplane.OpHeartbeat, backplane.OpLeave, backplane.OpClaim, backplane.OpRelease,
		backplane.OpArrive, backplane.OpPutHandoff, backplane.OpIncrement:
	default:
		return nil
	}
	b.mu.Lock()
	open := b.open
	b.mu.Unlock()
	select {
	case <-open:
		return nil
	default:
	}
	b.calls.Add(1)
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// blackholeFleet runs a fleet of one on a blackhole with a call timeout
// far longer than any test waits, so a call on a step worker shows as a
// stall that lasts the whole test. The cut ends before the fleet stops.
func blackholeFleet(t *testing.T) (*fleet.Fleet, *blackhole) {
	t.Helper()
	bh := newBlackhole()
	f, err := fleet.New(fleet.Config{NodeID: "a", Heartbeat: 2 * time.Minute, CallTimeout: time.Minute}, bh, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { bh.cut(false); cancel(); <-done })
	return f, bh
}

// passes returns how many passes room id has had.
func (g *counter) passCount(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.passes[id])
}

// waitPasses waits until room id has had n more passes than it had, and
// fails the test after 10 s: a worker stalled by a backplane call waits a
// minute.
func waitPasses(t *testing.T, g *counter, id string, n int) {
	t.Helper()
	want := g.passCount(id) + n
	testrun.WaitFor(t, fmt.Sprintf("room %s has had %d passes (a stalled worker waits a minute)", id, want), func() bool { return g.passCount(id) >= want })
}

func TestBlackholedBackplaneStallsNoWorker(t *testing.T) {
	f, bh := blackholeFleet(t)
	g := newCounter()
	h := newHost(t, g, Config{Workers: 1})
	h.UseFleet(f)
	runHost(t, h)
	ctx := t.Context()
	for _, info := range []Info{{ID: "ends", Players: []string{"p1"}}, {ID: "left", Players: []string{"p2", "p3"}}, {ID: "other", Players: []string{"p4"}}} {
		if _, err := h.OpenRoom(ctx, info); err != nil {
			t.Fatal(err)
		}
	}
	waitPasses(t, g, "other", 2)
	bh.cut(true)

	ends, _ := h.Room("ends")
	ends.End("over")
	h.Unseat("p2")
	testrun.WaitFor(t, "the end and the leave", func() bool { return ends.Ended() && h.RoomOf("p2") == "" })
	// One worker steps all three rooms: a backplane call for the end or
	// the leave would hold it for the call timeout.
	waitPasses(t, g, "other", 30)
	waitPasses(t, g, "left", 30)
	if f.Holds(fleet.KindPlayer, "p1") || f.Holds(fleet.KindPlayer, "p2") {
		t.Fatal("claims of players gone are still held")
	}
}

func TestShutdownWithBlackholedBackplaneIsPrompt(t *testing.T) {
	f, bh := blackholeFleet(t)
	h := newHost(t, newCounter(), Config{})
	h.UseFleet(f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	for i := range 10 {
		id := string(rune('a' + i))
		if _, err := h.OpenRoom(t.Context(), Info{Players: []string{id + "1", id + "2"}}); err != nil {
			t.Fatal(err)
		}
	}
	bh.cut(true)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // the call timeout is a minute
		t.Fatal("Run did not return: it waits for the backplane room by room")
	}
	if h.Rooms() != 0 {
		t.Fatalf("%d rooms left running", h.Rooms())
	}
}

func TestRunReturnsWithClientInHello(t *testing.T) {
	h := newHost(t, newCounter(), Config{HelloTimeout: time.Minute})
	srv := newServer(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	returned := false
	defer func() {
		cancel()
		if !returned {
			<-done
		}
	}()
	<-h.Started()
	c := playtest.DialPlay(t, srv.URL, "ticket=x")
	testrun.WaitFor(t, "the client is in hello", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.hellos) == 1
	})
	closed := make(chan websocket.StatusCode, 1)
	go func() { closed <- c.CloseCode() }()
	cancel()
	select {
	case <-done:
		returned = true
	case <-time.After(10 * time.Second): // the hello timeout is a minute
		t.Fatal("Run did not return with a client in hello")
	}
	if code := <-closed; code != StatusGoingAway {
		t.Fatalf("a client in hello at shutdown closed with %d, want %d", code, StatusGoingAway)
	}
	// A client that comes once Run has returned is refused.
	tk, _ := h.Tickets().Issue("late")
	if _, _, err := playtest.TryDial(t, playtest.PlayURL(srv.URL, "ticket="+tk), nil); err == nil {
		t.Fatal("a connection after Run returned was accepted")
	}
}

func TestNoHelloGetsCloseFrame(t *testing.T) {
	_, srv := startHost(t, Config{HelloTimeout: 20 * time.Millisecond})
	c := playtest.DialPlay(t, srv.URL, "ticket=x")
	if code := c.CloseCode(); code != StatusBadHello {
		t.Fatalf("a client that never says hello closed with %d, want %d", code, StatusBadHello)
	}
}

// opener is a module that opens a room once the host is stopping.
type opener struct {
	h   ModuleHost
	err chan error
}

func (o *opener) Attach(h ModuleHost) error { o.h = h; return nil }
func (o *opener) Run(ctx context.Context) error {
	<-ctx.Done()
	o.err <- o.h.Open(context.Background(), Info{ID: "late", Players: []string{"p9"}})
	return nil
}

func TestRoomOpenedWhileStoppingIsRefused(t *testing.T) {
	h := newHost(t, newCounter(), Config{})
	o := &opener{err: make(chan error, 1)}
	if err := h.Use(o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	<-h.Started()
	cancel()
	<-done
	if err := <-o.err; !errors.Is(err, ErrClosed) {
		if r, ok := h.Room("late"); ok && !r.Ended() {
			t.Fatalf("a room opened while Run stopped (%v) is left running", err)
		}
	}
}

func TestLatenessCountsStalledSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newCounter()
		g.onStep = func(r *Room[*csim, int, *cplayer]) {
			if r.ID() == "slow" && r.Step() == 30 {
				time.Sleep(500 * time.Millisecond) // a hook that blocks
			}
		}
		h := newHost(t, g, Config{Rate: 60, Workers: 1})
		runHost(t, h)
		for _, id := range []string{"slow", "other"} {
			if _, err := h.OpenRoom(t.Context(), Info{ID: id, Players: []string{id}}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		// About 30 steps of each room were owed during the stall, the
		// oldest half a second late: they are well over 1% of the steps.
		if p, n := h.Lateness(0.99); p < 100*time.Millisecond {
			t.Fatalf("p99 lateness %v over %d steps, with a 500ms stall of the only worker", p, n)
		}
	})
}

// busyFleet is a fleet whose lock the test holds, as the fleet's
// heartbeat holds it for milliseconds while it lists many thousands of
// claims: ReleaseLater waits for it.
type busyFleet struct {
	*fleet.Fleet
	mu sync.Mutex
}

func (b *busyFleet) ReleaseLater(kind string, ids ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Fleet.ReleaseLater(kind, ids...)
}

// busyHost runs a host with one worker on a working fleet (f) that the
// test can make busy by holding bf.mu.
func busyHost(t *testing.T) (*fleet.Fleet, *busyFleet, *counter, *Host[*csim, int, *cplayer]) {
	t.Helper()
	f, _ := blackholeFleet(t) // never cut
	bf := &busyFleet{Fleet: f}
	g := newCounter()
	h := newHost(t, g, Config{Workers: 1})
	h.UseFleet(bf)
	runHost(t, h)
	return f, bf, g, h
}

// A room that ends, or a player who leaves, while the fleet is busy
// holds no worker: the rooms behind it keep their rate, and the claims
// are released once the fleet is free.
func TestBusyFleetStallsNoWorker(t *testing.T) {
	f, bf, g, h := busyHost(t)
	for _, info := range []Info{{ID: "ends", Players: []string{"p1"}}, {ID: "left", Players: []string{"p2", "p3"}}, {ID: "other", Players: []string{"p4"}}} {
		if _, err := h.OpenRoom(t.Context(), info); err != nil {
			t.Fatal(err)
		}
	}
	waitPasses(t, g, "other", 2)
	bf.mu.Lock()
	busy := true
	defer func() {
		if busy {
			bf.mu.Unlock()
		}
	}()
	ends, _ := h.Room("ends")
	ends.End("over")
	h.Unseat("p2")
	testrun.WaitFor(t, "the end and the leave are applied while the fleet is busy (a worker waiting for the fleet never applies them)",
		func() bool { return ends.Ended() && h.RoomOf("p2") == "" })
	// One worker steps the rooms: waiting for the fleet would hold it
	// until the test ends.
	waitPasses(t, g, "other", 30)
	waitPasses(t, g, "left", 30)
	bf.mu.Unlock()
	busy = false
	testrun.WaitFor(t, "the claims of players gone are released once the fleet is free",
		func() bool { return !f.Holds(fleet.KindPlayer, "p1") && !f.Holds(fleet.KindPlayer, "p2") })
	if !f.Holds(fleet.KindPlayer, "p3") || !f.Holds(fleet.KindPlayer, "p4") {
		t.Fatal("claims of players still seated were released")
	}
}

// A player seated again right after its seat ended keeps the new claim:
// the release queued for the old seat never reaches the fleet after it.
// The release waits in the host's queue, or in a hand-over to a busy
// fleet, when the new seat is claimed.
func TestSeatedAgainKeepsClaim(t *testing.T) {
	f, bf, g, h := busyHost(t)
	r, err := h.OpenRoom(t.Context(), Info{ID: "first", Players: []string{"p1"}})
	if err != nil {
		t.Fatal(err)
	}
	bf.mu.Lock() // the release waits in the host's queue
	r.End("over")
	testrun.WaitFor(t, "the room ends", func() bool { return h.RoomOf("p1") == "" })
	opened := make(chan error, 1)
	go func() {
		_, err := h.OpenRoom(t.Context(), Info{ID: "second", Players: []string{"p1"}})
		opened <- err
	}()
	// The seat's claim comes first, and waits for the hand-over in
	// progress, if any, which waits for the busy fleet.
	bf.mu.Unlock()
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	waitPasses(t, g, "second", 2) // the worker is past the first room's end
	h.handOverReleases()          // and whatever it queued is with the fleet
	if !f.Holds(fleet.KindPlayer, "p1") {
		t.Fatal("the claim of the player seated again was released")
	}
}

// gateWatcher holds the step worker in RoomChanged when room id ends,
// until gate is closed.
type gateWatcher struct {
	id      string
	holding chan struct{} // closed when the worker is held
	gate    chan struct{}
}

func (w *gateWatcher) RoomChanged(s RoomState) {
	if s.Ended && s.ID == w.id {
		close(w.holding)
		<-w.gate
	}
}

// A player seated again while the worker is still ending the player's
// old room keeps the new claim: the old room's release must not follow
// the new seat's claim to the fleet.
func TestSeatedAgainDuringRoomEndKeepsClaim(t *testing.T) {
	f, _ := blackholeFleet(t) // never cut
	g := newCounter()
	h := newHost(t, g, Config{Workers: 1})
	h.UseFleet(f)
	w := &gateWatcher{id: "first", holding: make(chan struct{}), gate: make(chan struct{})}
	h.AddRoomWatcher(w)
	runHost(t, h)
	r, err := h.OpenRoom(t.Context(), Info{ID: "first", Players: []string{"p1"}})
	if err != nil {
		t.Fatal(err)
	}
	r.End("over")
	<-w.holding // the worker has dropped the seat, and not yet finished
	open := true
	defer func() {
		if open {
			close(w.gate)
		}
	}()
	if _, err := h.OpenRoom(t.Context(), Info{ID: "second", Players: []string{"p1"}}); err != nil {
		t.Fatal(err)
	}
	close(w.gate)
	open = false
	waitPasses(t, g, "second", 2) // the worker is past the first room's end
	h.handOverReleases()          // and whatever it queued is with the fleet
	if !f.Holds(fleet.KindPlayer, "p1") {
		t.Fatal("the claim of the player seated again was released")
	}
}
