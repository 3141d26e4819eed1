// Package backplanetest is the conformance suite that every
// backplane.Backplane implementation runs (SPEC B4).
//
// An implementation's test calls Run with a function that makes a Harness
// on a fresh store for each case:
//
//	func TestConformance(t *testing.T) {
//		backplanetest.Run(t, func(t *testing.T) backplanetest.Harness { ... })
//	}
package backplanetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// Harness connects the suite to one fresh store.
type Harness struct {
	// Open returns a backplane bound to the named cluster of the store.
	// Backplanes opened for the same cluster must see each other's writes.
	// The harness closes them when the test ends.
	Open func(t *testing.T, cluster string) backplane.Backplane

	// Advance moves the store's clock forward by d: a fake clock is
	// advanced, a real store is waited for.
	Advance func(t *testing.T, d time.Duration)

	// Stop makes the store unreachable for every backplane opened on it.
	Stop func(t *testing.T)

	// Scale multiplies the short ttls and waits of the time-driven cases
	// (0 and 1 leave them as written). A real store on a loaded machine
	// takes tens of milliseconds a call; a scale of a few keeps those
	// calls well inside the cases' margins.
	Scale int
}

// d returns d scaled by h.Scale.
func (h Harness) d(d time.Duration) time.Duration {
	if h.Scale > 1 {
		return d * time.Duration(h.Scale)
	}
	return d
}

// warm opens every connection of bps before a race, so that the race is
// between the calls, not between dials.
func warm(t *testing.T, bps []backplane.Backplane) {
	t.Helper()
	for _, b := range bps {
		_, err := b.Nodes(ctxT(t))
		must(t, err)
	}
}

// hangLimit is how long a call may take, past its own deadline, before the
// suite reports it as hanging.
const hangLimit = 10 * time.Second

// Run runs the suite. newHarness is called once per case.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"Registry", testRegistry},
		{"Expiry", testExpiry},
		{"Leave", testLeave},
		{"Claims", testClaims},
		{"ClaimUniqueRace", testClaimUniqueRace},
		{"ClaimTakeOver", testClaimTakeOver},
		{"Reassert", testReassert},
		{"ClaimLease", testClaimLease},
		{"Handoffs", testHandoffs},
		{"HandoffHold", testHandoffHold},
		{"HandoffTakeRace", testHandoffTakeRace},
		{"Arrive", testArrive},
		{"Counter", testCounter},
		{"CounterRace", testCounterRace},
		{"Records", testRecords},
		{"SwapRecords", testSwapRecords},
		{"ClusterIsolation", testClusterIsolation},
		{"BadInput", testBadInput},
		{"Stopped", testStopped},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newHarness(t))
		})
	}
}

// ctxT bounds one call. The bound only ends a call that hangs: it is long,
// as a TLS handshake to a store on a starved machine under the race
// detector can take seconds.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func node(id string) backplane.Node { return backplane.Node{ID: id, Data: []byte("record of " + id)} }

// heartbeat writes id's record with ttl and returns the view.
func heartbeat(t *testing.T, b backplane.Backplane, id string, ttl time.Duration) []backplane.Node {
	t.Helper()
	nodes, _, err := b.Heartbeat(ctxT(t), node(id), ttl)
	must(t, err)
	return nodes
}

func ids(nodes []backplane.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	slices.Sort(out)
	return out
}

func liveIDs(t *testing.T, b backplane.Backplane) []string {
	t.Helper()
	nodes, err := b.Nodes(ctxT(t))
	must(t, err)
	return ids(nodes)
}

func wantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: nodes %q, want %q", what, got, want)
	}
}

func testRegistry(t *testing.T, h Harness) {
	a, b, c := h.Open(t, "reg"), h.Open(t, "reg"), h.Open(t, "reg")
	heartbeat(t, a, "a", time.Minute)
	heartbeat(t, b, "b", time.Minute)
	view := heartbeat(t, c, "c", time.Minute)
	wantIDs(t, "heartbeat view", ids(view), "a", "b", "c")
	for _, n := range view {
		if want := node(n.ID).Data; !bytes.Equal(n.Data, want) {
			t.Errorf("node %s data %q, want %q", n.ID, n.Data, want)
		}
	}
	wantIDs(t, "Nodes", liveIDs(t, a), "a", "b", "c")

	// A later heartbeat replaces the record.
	_, created, err := b.Heartbeat(ctxT(t), backplane.Node{ID: "b", Data: []byte("v2")}, time.Minute)
	must(t, err)
	if created {
		t.Error("a live node's heartbeat reports created")
	}
	nodes, err := a.Nodes(ctxT(t))
	must(t, err)
	for _, n := range nodes {
		if n.ID == "b" && string(n.Data) != "v2" {
			t.Errorf("b's record %q after update, want v2", n.Data)
		}
	}
}

func testExpiry(t *testing.T, h Harness) {
	a, b := h.Open(t, "exp"), h.Open(t, "exp")
	if _, created, err := a.Heartbeat(ctxT(t), node("short"), h.d(300*time.Millisecond)); err != nil || !created {
		t.Fatalf("first heartbeat: created %v, %v; want created", created, err)
	}
	heartbeat(t, b, "long", time.Minute)
	must(t, b.Claim(ctxT(t), "short", backplane.Key{Kind: "player", ID: "p1"}))
	h.Advance(t, h.d(200*time.Millisecond))
	// short has missed a heartbeat: a reader is told how long it has left.
	for _, n := range heartbeat(t, b, "long", time.Minute) {
		switch {
		case n.ID == "short" && (n.TTL <= 0 || n.TTL > h.d(100*time.Millisecond)):
			t.Errorf("short's record, 100ms from expiry, is reported with TTL %v", n.TTL)
		case n.ID == "long" && (n.TTL < 0 || n.TTL > time.Minute):
			t.Errorf("long's record, just written for a minute, is reported with TTL %v", n.TTL)
		}
	}
	refreshed(t, h, a, b)
	h.Advance(t, h.d(200*time.Millisecond))
	wantIDs(t, "after expiry", liveIDs(t, b), "long")
	// An expired node that heartbeats again is back, and told so.
	view, created, err := a.Heartbeat(ctxT(t), node("short"), time.Minute)
	must(t, err)
	if !created {
		t.Error("heartbeat after expiry does not report created")
	}
	wantIDs(t, "after return", ids(view), "long", "short")
}

// refreshed heartbeats short again and checks that b still sees it
// once the store's clock has moved two thirds of its ttl. A real store's
// clock is the wall clock: when the refresh, the wait and the read took
// longer than the ttl (a starved machine), short expired as it should and
// the look proves nothing, so it is taken again, a few times at most.
func refreshed(t *testing.T, h Harness, a, b backplane.Backplane) {
	t.Helper()
	ttl := h.d(300 * time.Millisecond)
	for try := 1; ; try++ {
		start := time.Now()
		heartbeat(t, a, "short", ttl)
		h.Advance(t, h.d(200*time.Millisecond))
		live := liveIDs(t, b)
		if took := time.Since(start); took >= ttl && try < 5 {
			t.Logf("refresh, wait and read took %v, past the ttl %v: looking again", took, ttl)
			continue
		}
		wantIDs(t, "after refresh", live, "long", "short")
		return
	}
}

func testLeave(t *testing.T, h Harness) {
	b := h.Open(t, "leave")
	heartbeat(t, b, "a", time.Minute)
	heartbeat(t, b, "b", time.Minute)
	key := backplane.Key{Kind: "lobby", ID: "ABCD"}
	must(t, b.Claim(ctxT(t), "a", key))
	must(t, b.Leave(ctxT(t), "a"))
	wantIDs(t, "after leave", liveIDs(t, b), "b")
	// The claim outlives its holder; the caller's view says it is gone.
	if got := locate(t, b, key); got != "a" {
		t.Fatalf("Locate of a departed node's claim = %q, want a", got)
	}
	must(t, b.Leave(ctxT(t), "never-was"))
}

func locate(t *testing.T, b backplane.Backplane, key backplane.Key) string {
	t.Helper()
	owner, err := b.Locate(ctxT(t), key)
	if errors.Is(err, backplane.ErrNotFound) {
		return ""
	}
	must(t, err)
	return owner
}

func testClaims(t *testing.T, h Harness) {
	b := h.Open(t, "claims")
	heartbeat(t, b, "a", time.Minute)
	heartbeat(t, b, "b", time.Minute)
	p1, p2 := backplane.Key{Kind: "player", ID: "p1"}, backplane.Key{Kind: "player", ID: "p2"}
	if got := locate(t, b, p1); got != "" {
		t.Fatalf("unclaimed key located at %q", got)
	}
	must(t, b.Claim(ctxT(t), "a", p1, p2))
	if got := locate(t, b, p1); got != "a" {
		t.Fatalf("Locate(p1) = %q, want a", got)
	}
	must(t, b.Claim(ctxT(t), "b", p2)) // Claim replaces
	if got := locate(t, b, p2); got != "b" {
		t.Fatalf("Locate(p2) after b's claim = %q, want b", got)
	}
	// Same id, other kind: a different unit.
	if got := locate(t, b, backplane.Key{Kind: "lobby", ID: "p1"}); got != "" {
		t.Fatalf("lobby/p1 located at %q; kinds must not mix", got)
	}
	must(t, b.Release(ctxT(t), "a", p2)) // not a's: untouched
	if got := locate(t, b, p2); got != "b" {
		t.Fatalf("a's release removed b's claim: Locate(p2) = %q", got)
	}
	must(t, b.Release(ctxT(t), "a", p1))
	if got := locate(t, b, p1); got != "" {
		t.Fatalf("Locate(p1) after release = %q, want none", got)
	}
	must(t, b.Release(ctxT(t), "a", p1)) // releasing again is fine

	// Several keys in one call: only the owner's go.
	p3 := backplane.Key{Kind: "player", ID: "p3"}
	must(t, b.Claim(ctxT(t), "a", p1, p3))
	must(t, b.Release(ctxT(t), "a", p1, p2, p3))
	for _, k := range []backplane.Key{p1, p3} {
		if got := locate(t, b, k); got != "" {
			t.Fatalf("Locate(%s) after releasing several = %q, want none", k, got)
		}
	}
	if got := locate(t, b, p2); got != "b" {
		t.Fatalf("a's release of several removed b's claim: Locate(p2) = %q", got)
	}
	must(t, b.Release(ctxT(t), "a"))
}

func testArrive(t *testing.T, h Harness) {
	b := h.Open(t, "arrive")
	p1 := backplane.Key{Kind: "player", ID: "p1"}
	owner, taken, err := b.Arrive(ctxT(t), p1, "B", "p1", time.Minute)
	must(t, err)
	if owner != "" || taken.Data != nil || taken.Token != "" {
		t.Fatalf("Arrive with nothing stored = %q, %+v; want nothing", owner, taken)
	}
	must(t, b.Claim(ctxT(t), "A", p1))
	must(t, b.PutHandoff(ctxT(t), "B", "p1", []byte("waited 4.2s"), time.Minute))
	if owner, taken, err = b.Arrive(ctxT(t), p1, "C", "p1", time.Minute); err != nil || owner != "A" || taken.Data != nil {
		t.Fatalf("Arrive at C = %q, %+v, %v; want A and B's handoff left alone", owner, taken, err)
	}
	owner, taken, err = b.Arrive(ctxT(t), p1, "B", "p1", time.Minute)
	must(t, err)
	if owner != "A" || string(taken.Data) != "waited 4.2s" || taken.Token == "" {
		t.Fatalf("Arrive at B = %q, %+v; want A and the handoff", owner, taken)
	}
	if _, err := b.TakeHandoff(ctxT(t), "B", "p1", time.Minute); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("handoff held by Arrive taken again: %v, want ErrNotFound", err)
	}
	if owner, again, err := b.Arrive(ctxT(t), p1, "B", "p1", time.Minute); err != nil || owner != "A" || again.Data != nil {
		t.Fatalf("Arrive while Arrive's take holds the handoff = %q, %+v, %v; want A and no handoff", owner, again, err)
	}
	must(t, b.ConfirmHandoff(ctxT(t), "B", "p1", taken.Token))
	// An empty handoff is still one.
	must(t, b.PutHandoff(ctxT(t), "B", "p2", nil, time.Minute))
	if _, taken, err = b.Arrive(ctxT(t), backplane.Key{Kind: "player", ID: "p2"}, "B", "p2", time.Minute); err != nil || taken.Data == nil {
		t.Fatalf("Arrive with an empty handoff = %+v, %v; want it, empty", taken, err)
	}
	// Arrive's take that is not confirmed lets the handoff go at its hold's
	// end; one confirmed never comes back.
	must(t, b.PutHandoff(ctxT(t), "B", "p3", []byte("again"), time.Minute))
	must(t, b.PutHandoff(ctxT(t), "B", "p4", []byte("once"), time.Minute))
	p3, p4 := backplane.Key{Kind: "player", ID: "p3"}, backplane.Key{Kind: "player", ID: "p4"}
	if _, taken, err = b.Arrive(ctxT(t), p3, "B", "p3", h.d(200*time.Millisecond)); err != nil || string(taken.Data) != "again" {
		t.Fatalf("Arrive = %+v, %v; want the handoff", taken, err)
	}
	if _, taken, err = b.Arrive(ctxT(t), p4, "B", "p4", h.d(200*time.Millisecond)); err != nil || string(taken.Data) != "once" {
		t.Fatalf("Arrive = %+v, %v; want the handoff", taken, err)
	}
	must(t, b.ConfirmHandoff(ctxT(t), "B", "p4", taken.Token))
	h.Advance(t, h.d(400*time.Millisecond))
	if _, taken, err = b.Arrive(ctxT(t), p3, "B", "p3", time.Minute); err != nil || string(taken.Data) != "again" {
		t.Fatalf("Arrive after an unconfirmed take's hold = %+v, %v; want the handoff again", taken, err)
	}
	if _, taken, err = b.Arrive(ctxT(t), p4, "B", "p4", time.Minute); err != nil || taken.Data != nil {
		t.Fatalf("Arrive after a confirmed take = %+v, %v; want none", taken, err)
	}
}

func testClaimUniqueRace(t *testing.T, h Harness) {
	const racers = 32
	key := backplane.Key{Kind: "lobby", ID: "K7QX"}
	bps := make([]backplane.Backplane, racers)
	for i := range bps {
		bps[i] = h.Open(t, "race")
		heartbeat(t, bps[i], fmt.Sprintf("n%02d", i), time.Minute)
	}
	holders := make([]string, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			holders[i], errs[i] = bps[i].ClaimUnique(t.Context(), fmt.Sprintf("n%02d", i), key)
		})
	}
	close(start)
	wg.Wait()
	must(t, errors.Join(errs...))
	winners := 0
	for i, got := range holders {
		if got == fmt.Sprintf("n%02d", i) {
			winners++
		}
		if got != holders[0] {
			t.Fatalf("racers disagree on the holder: %q and %q", holders[0], got)
		}
	}
	if winners != 1 {
		t.Fatalf("%d winners, want exactly 1", winners)
	}
	if got := locate(t, bps[0], key); got != holders[0] {
		t.Fatalf("Locate = %q, want the winner %q", got, holders[0])
	}
	// The winner claiming again keeps it; a loser still loses.
	if got, err := bps[0].ClaimUnique(ctxT(t), holders[0], key); err != nil || got != holders[0] {
		t.Fatalf("winner's second claim = %q, %v", got, err)
	}
}

func testClaimTakeOver(t *testing.T, h Harness) {
	b := h.Open(t, "takeover")
	heartbeat(t, b, "dead", h.d(300*time.Millisecond))
	heartbeat(t, b, "alive", time.Minute)
	key := backplane.Key{Kind: "lobby", ID: "ZZZZ"}
	if got, err := b.ClaimUnique(ctxT(t), "dead", key); err != nil || got != "dead" {
		t.Fatalf("first claim = %q, %v", got, err)
	}
	if got, err := b.ClaimUnique(ctxT(t), "alive", key); err != nil || got != "dead" {
		t.Fatalf("claim of a live node's key = %q, %v; want dead keeps it", got, err)
	}
	h.Advance(t, h.d(500*time.Millisecond))
	heartbeat(t, b, "alive", time.Minute)
	if got, err := b.ClaimUnique(ctxT(t), "alive", key); err != nil || got != "alive" {
		t.Fatalf("claim of a dead node's key = %q, %v; want take-over", got, err)
	}
	if got := locate(t, b, key); got != "alive" {
		t.Fatalf("Locate after take-over = %q", got)
	}
}

// testReassert: one call claims many keys as ClaimUnique would each,
// leaving to live holders what they hold, and says which.
func testReassert(t *testing.T, h Harness) {
	b := h.Open(t, "reassert")
	heartbeat(t, b, "a", time.Minute)
	heartbeat(t, b, "b", time.Minute)
	heartbeat(t, b, "dead", h.d(time.Second))
	k := func(id string) backplane.Key { return backplane.Key{Kind: "player", ID: id} }
	must(t, b.Claim(ctxT(t), "a", k("mine")))
	must(t, b.Claim(ctxT(t), "b", k("bs")))
	if got, err := b.ClaimUnique(ctxT(t), "dead", k("deads")); err != nil || got != "dead" {
		t.Fatalf("dead's claim = %q, %v", got, err)
	}
	lost, err := b.Reassert(ctxT(t), "a", time.Minute, k("mine"), k("bs"), k("deads"), k("free"))
	must(t, err)
	wantKeys(t, "lost while everyone lives", lost, k("bs"), k("deads"))
	for id, want := range map[string]string{"mine": "a", "bs": "b", "deads": "dead", "free": "a"} {
		if got := locate(t, b, k(id)); got != want {
			t.Errorf("after Reassert, Locate(%s) = %q, want %q", id, got, want)
		}
	}
	// A dead holder's claim is taken over.
	h.Advance(t, h.d(1200*time.Millisecond))
	heartbeat(t, b, "a", time.Minute)
	lost, err = b.Reassert(ctxT(t), "a", time.Minute, k("deads"))
	must(t, err)
	wantKeys(t, "lost to a dead holder", lost)
	if got := locate(t, b, k("deads")); got != "a" {
		t.Errorf("Reassert of a dead node's claim: Locate = %q, want a", got)
	}
	if lost, err := b.Reassert(ctxT(t), "a", time.Minute); err != nil || len(lost) != 0 {
		t.Errorf("Reassert of nothing = %v, %v", lost, err)
	}
}

// testClaimLease: a claim Reassert gave a lease stops pointing anywhere
// when the lease runs out unrenewed (its release was lost), lives on while
// renewed, and can be released.
func testClaimLease(t *testing.T, h Harness) {
	b := h.Open(t, "lease")
	heartbeat(t, b, "a", time.Minute)
	heartbeat(t, b, "b", time.Minute)
	k := func(id string) backplane.Key { return backplane.Key{Kind: "player", ID: id} }
	must(t, b.Claim(ctxT(t), "a", k("kept"), k("lost"), k("released")))
	// A claim's first lease is its holder's record's.
	heartbeat(t, b, "c", h.d(time.Second))
	must(t, b.Claim(ctxT(t), "c", k("cs")))
	_, err := b.Reassert(ctxT(t), "a", h.d(time.Second), k("kept"), k("lost"), k("released"))
	must(t, err)
	must(t, b.Release(ctxT(t), "a", k("released")))
	if got := locate(t, b, k("released")); got != "" {
		t.Errorf("a released leased claim is located at %q", got)
	}
	h.Advance(t, h.d(600*time.Millisecond))
	renewed := time.Now()
	_, err = b.Reassert(ctxT(t), "a", h.d(time.Second), k("kept")) // "lost" is no longer held
	must(t, err)
	h.Advance(t, h.d(600*time.Millisecond))
	leaseHolds(t, h, b, k("kept"), renewed)
	if got := locate(t, b, k("lost")); got != "" {
		t.Errorf("a claim past its lease: Locate = %q, want none", got)
	}
	if got := locate(t, b, k("cs")); got != "" {
		t.Errorf("a claim past its holder's record: Locate = %q, want none", got)
	}
	if owner, _, err := b.Arrive(ctxT(t), k("lost"), "b", "lost", time.Minute); err != nil || owner != "" {
		t.Errorf("a claim past its lease: Arrive = %q, %v; want none", owner, err)
	}
	if got, err := b.ClaimUnique(ctxT(t), "b", k("lost")); err != nil || got != "b" {
		t.Errorf("ClaimUnique of a claim past its lease = %q, %v; want b", got, err)
	}
}

// leaseHolds checks that a's claim on key, whose lease (h.d(1s)) was
// renewed at renewed, points at a, and that ClaimUnique does not take it
// from a live holder. A real store's clock is the wall clock: when the
// checks end a lease or more after the renewal (a starved machine), the
// claim expired as it should and they prove nothing, so they are made
// again on a fresh key, leased just before, a few times at most.
func leaseHolds(t *testing.T, h Harness, b backplane.Backplane, key backplane.Key, renewed time.Time) {
	t.Helper()
	lease := h.d(time.Second)
	for try := 1; ; try++ {
		owner := locate(t, b, key)
		unique, err := b.ClaimUnique(ctxT(t), "b", key)
		if took := time.Since(renewed); took >= lease && try < 5 {
			t.Logf("renewal and checks took %v, past the lease %v: checking again", took, lease)
			key.ID = fmt.Sprintf("%s-%d", key.ID, try)
			must(t, b.Claim(ctxT(t), "a", key))
			renewed = time.Now()
			_, err := b.Reassert(ctxT(t), "a", lease, key)
			must(t, err)
			h.Advance(t, h.d(600*time.Millisecond))
			continue
		}
		if owner != "a" {
			t.Errorf("a renewed claim: Locate = %q, want a", owner)
		}
		// A live holder's leased claim is not taken by ClaimUnique.
		if err != nil || unique != "a" {
			t.Errorf("ClaimUnique of a live, leased claim = %q, %v; want a keeps it", unique, err)
		}
		return
	}
}

func wantKeys(t *testing.T, what string, got []backplane.Key, want ...backplane.Key) {
	t.Helper()
	key := func(a, b backplane.Key) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, key)
	slices.SortFunc(want, key)
	if !slices.Equal(got, want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// take takes target/id's handoff for hold and fails the test unless it
// gets want.
func take(t *testing.T, b backplane.Backplane, target, id string, hold time.Duration, want string) backplane.Taken {
	t.Helper()
	taken, err := b.TakeHandoff(ctxT(t), target, id, hold)
	if err != nil || string(taken.Data) != want || taken.Token == "" {
		t.Fatalf("take %s/%s = %+v, %v; want %q and a token", target, id, taken, err, want)
	}
	return taken
}

// noTake fails the test unless a take of target/id gets ErrNotFound.
func noTake(t *testing.T, b backplane.Backplane, target, id, why string) {
	t.Helper()
	if taken, err := b.TakeHandoff(ctxT(t), target, id, time.Minute); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("%s: take %s/%s = %+v, %v; want ErrNotFound", why, target, id, taken, err)
	}
}

func testHandoffs(t *testing.T, h Harness) {
	b := h.Open(t, "handoffs")
	must(t, b.PutHandoff(ctxT(t), "B", "p1", []byte("waited 4.2s"), time.Minute))
	noTake(t, b, "C", "p1", "another target")
	taken := take(t, b, "B", "p1", time.Minute, "waited 4.2s")
	noTake(t, b, "B", "p1", "a second take during the hold")
	must(t, b.ConfirmHandoff(ctxT(t), "B", "p1", taken.Token))
	noTake(t, b, "B", "p1", "a take after the confirm")
	must(t, b.ConfirmHandoff(ctxT(t), "B", "p1", taken.Token)) // again: nothing to do
	must(t, b.ConfirmHandoff(ctxT(t), "B", "absent", "no-such-take"))
	// A handoff replaced keeps only its latest data; one untaken expires.
	must(t, b.PutHandoff(ctxT(t), "B", "p2", []byte("old"), h.d(300*time.Millisecond)))
	must(t, b.PutHandoff(ctxT(t), "B", "p2", []byte("new"), h.d(300*time.Millisecond)))
	must(t, b.PutHandoff(ctxT(t), "B", "p3", []byte("x"), h.d(300*time.Millisecond)))
	// A hold never makes a handoff outlive its ttl.
	must(t, b.PutHandoff(ctxT(t), "B", "p4", []byte("y"), h.d(300*time.Millisecond)))
	take(t, b, "B", "p2", time.Minute, "new")
	take(t, b, "B", "p4", time.Minute, "y")
	h.Advance(t, h.d(500*time.Millisecond))
	noTake(t, b, "B", "p3", "a take after expiry")
	noTake(t, b, "B", "p4", "a take after expiry, of a handoff taken unconfirmed")
}

// testHandoffHold: a take that is never confirmed (its caller gave up or
// failed) lets the handoff be taken again once its hold ends; one
// confirmed, during its hold or after, never comes back.
func testHandoffHold(t *testing.T, h Harness) {
	b := h.Open(t, "hold")
	hold := h.d(200 * time.Millisecond)
	for _, id := range []string{"lost", "confirmed", "late"} {
		must(t, b.PutHandoff(ctxT(t), "B", id, []byte("place of "+id), time.Minute))
	}
	lost := take(t, b, "B", "lost", hold, "place of lost")
	confirmed := take(t, b, "B", "confirmed", hold, "place of confirmed")
	late := take(t, b, "B", "late", hold, "place of late")
	must(t, b.ConfirmHandoff(ctxT(t), "B", "confirmed", confirmed.Token))
	h.Advance(t, 2*hold)
	must(t, b.ConfirmHandoff(ctxT(t), "B", "late", late.Token)) // after the hold, nobody took it since
	noTake(t, b, "B", "confirmed", "a confirmed take's handoff after its hold")
	noTake(t, b, "B", "late", "a take confirmed after its hold")
	again := take(t, b, "B", "lost", time.Minute, "place of lost")
	if again.Token == lost.Token {
		t.Fatalf("two takes have the same token %q", again.Token)
	}
	// The take that gave up confirms nothing now that another took it.
	must(t, b.ConfirmHandoff(ctxT(t), "B", "lost", lost.Token))
	noTake(t, b, "B", "lost", "during the second take's hold, after the first's late confirm")
	must(t, b.ConfirmHandoff(ctxT(t), "B", "lost", again.Token))
	noTake(t, b, "B", "lost", "after the second take's confirm")

	// A handoff written again while held can be taken at once, and the
	// take of the one it replaced confirms nothing.
	must(t, b.PutHandoff(ctxT(t), "B", "moved", []byte("first"), time.Minute))
	first := take(t, b, "B", "moved", time.Minute, "first")
	must(t, b.PutHandoff(ctxT(t), "B", "moved", []byte("second"), time.Minute))
	take(t, b, "B", "moved", hold, "second")
	must(t, b.ConfirmHandoff(ctxT(t), "B", "moved", first.Token))
	h.Advance(t, 2*hold)
	take(t, b, "B", "moved", time.Minute, "second")
}

func testHandoffTakeRace(t *testing.T, h Harness) {
	const racers = 32
	bps := make([]backplane.Backplane, racers)
	for i := range bps {
		bps[i] = h.Open(t, "takerace")
	}
	must(t, bps[0].PutHandoff(ctxT(t), "B", "p1", []byte("once"), time.Minute))
	must(t, bps[0].PutHandoff(ctxT(t), "B", "p2", []byte("once"), time.Minute))
	warm(t, bps)
	// Racing takes, and racing arrivals: exactly one gets the handoff.
	takes := map[string]func(b backplane.Backplane) ([]byte, error){
		"TakeHandoff": func(b backplane.Backplane) ([]byte, error) {
			taken, err := b.TakeHandoff(t.Context(), "B", "p1", time.Minute)
			return taken.Data, err
		},
		"Arrive": func(b backplane.Backplane) ([]byte, error) {
			_, taken, err := b.Arrive(t.Context(), backplane.Key{Kind: "player", ID: "p2"}, "B", "p2", time.Minute)
			if err == nil && taken.Data == nil {
				err = backplane.ErrNotFound
			}
			return taken.Data, err
		},
	}
	for name, takeIt := range takes {
		var got, notFound, other int
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				data, err := takeIt(bps[i])
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && string(data) == "once":
					got++
				case errors.Is(err, backplane.ErrNotFound):
					notFound++
				default:
					other++
					t.Error(data, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if got != 1 || notFound != racers-1 {
			t.Fatalf("%s: %d takers got the handoff, %d did not, %d failed; want exactly one", name, got, notFound, other)
		}
	}
}

func testCounter(t *testing.T, h Harness) {
	b := h.Open(t, "counter")
	ttl := h.d(500 * time.Millisecond)
	// A try whose first two calls took longer than the ttl in all (a
	// busy machine, the store's own clock) may find the counter expired
	// at the second: it proves nothing, and is made again on a new one.
	for try := 1; ; try++ {
		key := fmt.Sprintf("ticket:t%d", try)
		incr := func(by int64) int64 {
			t.Helper()
			n, err := b.Increment(ctxT(t), key, ttl, by)
			must(t, err)
			return n
		}
		began := time.Now()
		if n := incr(1); n != 1 {
			t.Fatalf("first increment = %d, want 1", n)
		}
		h.Advance(t, h.d(300*time.Millisecond))
		if n := incr(2); n != 3 {
			if time.Since(began) >= ttl && try < 5 {
				continue
			}
			t.Fatalf("second increment = %d, want 3", n)
		}
		// The expiry was set by the first increment, not moved by the
		// second.
		h.Advance(t, h.d(300*time.Millisecond))
		if n := incr(5); n != 5 {
			t.Fatalf("increment after the first one's expiry = %d, want 5 (a new counter)", n)
		}
		return
	}
}

func testCounterRace(t *testing.T, h Harness) {
	const racers, each = 32, 10
	bps := make([]backplane.Backplane, racers)
	for i := range bps {
		bps[i] = h.Open(t, "counterrace")
	}
	warm(t, bps)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			for range each {
				if _, err := bps[i].Increment(t.Context(), "hits", time.Minute, 1); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	n, err := bps[0].Increment(ctxT(t), "hits", time.Minute, 0)
	must(t, err)
	if n != racers*each {
		t.Fatalf("counter = %d after %d increments", n, racers*each)
	}
}

func testRecords(t *testing.T, h Harness) {
	b := h.Open(t, "records")
	if _, err := b.Record(ctxT(t), "fed-nodes", "au"); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("absent record: %v, want ErrNotFound", err)
	}
	must(t, b.PutRecord(ctxT(t), "fed-nodes", "au", []byte(`{"name":"au-sydney"}`)))
	must(t, b.PutRecord(ctxT(t), "fed-nodes", "fr", []byte(`{"name":"fr-paris"}`)))
	must(t, b.PutRecord(ctxT(t), "fed-nodes", "au", []byte(`{"name":"au-sydney","approved":true}`)))
	data, err := b.Record(ctxT(t), "fed-nodes", "au")
	must(t, err)
	if string(data) != `{"name":"au-sydney","approved":true}` {
		t.Fatalf("record %q", data)
	}
	// Records are durable: time does not remove them.
	h.Advance(t, h.d(500*time.Millisecond))
	all, err := b.Records(ctxT(t), "fed-nodes")
	must(t, err)
	if len(all) != 2 || string(all["fr"]) != `{"name":"fr-paris"}` {
		t.Fatalf("Records = %q", all)
	}
	must(t, b.DeleteRecord(ctxT(t), "fed-nodes", "au"))
	must(t, b.DeleteRecord(ctxT(t), "fed-nodes", "au"))
	all, err = b.Records(ctxT(t), "fed-nodes")
	must(t, err)
	if len(all) != 1 {
		t.Fatalf("Records after delete = %q", all)
	}
	empty, err := b.Records(ctxT(t), "none")
	must(t, err)
	if len(empty) != 0 {
		t.Fatalf("Records of an empty collection = %q", empty)
	}
}

func testClusterIsolation(t *testing.T, h Harness) {
	one, two := h.Open(t, "one"), h.Open(t, "two")
	key := backplane.Key{Kind: "lobby", ID: "SAME"}
	heartbeat(t, one, "a", time.Minute)
	must(t, one.Claim(ctxT(t), "a", key))
	must(t, one.PutHandoff(ctxT(t), "a", "p", []byte("x"), time.Minute))
	must(t, one.PutRecord(ctxT(t), "coll", "r", []byte("x")))
	if _, err := one.Increment(ctxT(t), "c", time.Minute, 7); err != nil {
		t.Fatal(err)
	}

	wantIDs(t, "other cluster", liveIDs(t, two))
	heartbeat(t, two, "a", time.Minute) // same node id, other cluster
	if got := locate(t, two, key); got != "" {
		t.Fatalf("claim crossed clusters: %q", got)
	}
	noTake(t, two, "a", "p", "the other cluster")
	if _, err := two.Record(ctxT(t), "coll", "r"); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("record crossed clusters: %v", err)
	}
	if n, err := two.Increment(ctxT(t), "c", time.Minute, 1); err != nil || n != 1 {
		t.Fatalf("counter crossed clusters: %d, %v", n, err)
	}
	if got, err := two.ClaimUnique(ctxT(t), "a", key); err != nil || got != "a" {
		t.Fatalf("unique claim in the other cluster = %q, %v", got, err)
	}
	wantIDs(t, "first cluster", liveIDs(t, one), "a")
}

func testBadInput(t *testing.T, h Harness) {
	b := h.Open(t, "bad")
	ctx := ctxT(t)
	checks := map[string]error{
		"empty node id":  func() error { _, _, err := b.Heartbeat(ctx, backplane.Node{}, time.Second); return err }(),
		"node id with {": func() error { _, _, err := b.Heartbeat(ctx, backplane.Node{ID: "a{b}"}, time.Second); return err }(),
		"empty owner":    b.Claim(ctx, "", backplane.Key{Kind: "player", ID: "p"}),
		"empty kind":     b.Claim(ctx, "a", backplane.Key{ID: "p"}),
		"empty claim id": b.Claim(ctx, "a", backplane.Key{Kind: "player"}),
		"unique no kind": func() error { _, err := b.ClaimUnique(ctx, "a", backplane.Key{ID: "p"}); return err }(),
		"reassert no id": func() error {
			_, err := b.Reassert(ctx, "a", time.Second, backplane.Key{Kind: "player"})
			return err
		}(),
		"handoff target":   b.PutHandoff(ctx, "", "p", nil, time.Second),
		"empty collection": b.PutRecord(ctx, "", "id", nil),
	}
	for name, err := range checks {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func testStopped(t *testing.T, h Harness) {
	b := h.Open(t, "stopped")
	heartbeat(t, b, "a", time.Minute)
	h.Stop(t)
	key := backplane.Key{Kind: "player", ID: "p"}
	calls := map[string]func(ctx context.Context) error{
		"Heartbeat": func(ctx context.Context) error { _, _, err := b.Heartbeat(ctx, node("a"), time.Minute); return err },
		"Nodes":     func(ctx context.Context) error { _, err := b.Nodes(ctx); return err },
		"Leave":     func(ctx context.Context) error { return b.Leave(ctx, "a") },
		"Claim":     func(ctx context.Context) error { return b.Claim(ctx, "a", key) },
		"ClaimUnique": func(ctx context.Context) error {
			_, err := b.ClaimUnique(ctx, "a", key)
			return err
		},
		"Reassert": func(ctx context.Context) error {
			_, err := b.Reassert(ctx, "a", time.Minute, key)
			return err
		},
		"Release":     func(ctx context.Context) error { return b.Release(ctx, "a", key) },
		"Locate":      func(ctx context.Context) error { _, err := b.Locate(ctx, key); return err },
		"Arrive":      func(ctx context.Context) error { _, _, err := b.Arrive(ctx, key, "a", "p", time.Minute); return err },
		"PutHandoff":  func(ctx context.Context) error { return b.PutHandoff(ctx, "a", "p", nil, time.Minute) },
		"TakeHandoff": func(ctx context.Context) error { _, err := b.TakeHandoff(ctx, "a", "p", time.Minute); return err },
		"ConfirmHandoff": func(ctx context.Context) error {
			return b.ConfirmHandoff(ctx, "a", "p", "token")
		},
		"Increment":    func(ctx context.Context) error { _, err := b.Increment(ctx, "k", time.Minute, 1); return err },
		"PutRecord":    func(ctx context.Context) error { return b.PutRecord(ctx, "c", "r", nil) },
		"Record":       func(ctx context.Context) error { _, err := b.Record(ctx, "c", "r"); return err },
		"DeleteRecord": func(ctx context.Context) error { return b.DeleteRecord(ctx, "c", "r") },
		"Records":      func(ctx context.Context) error { _, err := b.Records(ctx, "c"); return err },
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- call(ctx) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s on a stopped store: no error", name)
			}
		case <-time.After(hangLimit):
			t.Errorf("%s on a stopped store hangs past its deadline", name)
			<-done
		}
		cancel()
	}
}

// testSwapRecords: a compare-and-set over several records is all or
// nothing, and racing read-and-swap increments lose nothing. Every
// backplane of the project implements backplane.RecordSwapper.
func testSwapRecords(t *testing.T, h Harness) {
	a, b := swapper(t, h.Open(t, "swap")), swapper(t, h.Open(t, "swap"))
	swap := func(bp backplane.RecordSwapper, s ...backplane.RecordSwap) bool {
		t.Helper()
		ok, err := bp.SwapRecords(ctxT(t), s...)
		must(t, err)
		return ok
	}
	record := func(collection, id string) (string, error) {
		t.Helper()
		data, err := a.(backplane.Backplane).Record(ctxT(t), collection, id)
		return string(data), err
	}
	if !swap(a, backplane.RecordSwap{Collection: "x", ID: "1", New: []byte("v1")}) {
		t.Fatal("create of an absent record refused")
	}
	if swap(b, backplane.RecordSwap{Collection: "x", ID: "1", New: []byte("v2")}) {
		t.Fatal("create over a present record accepted")
	}
	// A failed check writes nothing, not even the swaps that matched.
	if swap(b,
		backplane.RecordSwap{Collection: "x", ID: "1", Old: []byte("v1"), New: []byte("v2")},
		backplane.RecordSwap{Collection: "y", ID: "1", Old: []byte("nope"), Check: true}) {
		t.Fatal("a swap with a failed check was made")
	}
	if got, _ := record("x", "1"); got != "v1" {
		t.Fatalf("after a failed swap: %q", got)
	}
	if !swap(b,
		backplane.RecordSwap{Collection: "x", ID: "1", Old: []byte("v1"), New: []byte("v2")},
		backplane.RecordSwap{Collection: "y", ID: "1", Check: true},
		backplane.RecordSwap{Collection: "z", ID: "9", New: []byte("new")}) {
		t.Fatal("a matching swap was refused")
	}
	if got, _ := record("x", "1"); got != "v2" {
		t.Fatalf("after a swap: %q", got)
	}
	if got, _ := record("z", "9"); got != "new" {
		t.Fatalf("after a swap: %q", got)
	}
	if _, err := record("y", "1"); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("a check created its record: %v", err)
	}
	if !swap(a, backplane.RecordSwap{Collection: "x", ID: "1", Old: []byte("v2")}) {
		t.Fatal("delete refused")
	}
	if _, err := record("x", "1"); !errors.Is(err, backplane.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}

	// Racing increments by read and swap lose nothing.
	const racers, each = 4, 100
	var wg sync.WaitGroup
	for i := range racers {
		bp := []backplane.RecordSwapper{a, b}[i%2]
		wg.Go(func() {
			for range each {
				for {
					old, err := bp.(backplane.Backplane).Record(t.Context(), "n", "n")
					if errors.Is(err, backplane.ErrNotFound) {
						old = nil
					} else if err != nil {
						t.Error(err)
						return
					}
					next := append(append([]byte(nil), old...), '.')
					ok, err := bp.SwapRecords(t.Context(), backplane.RecordSwap{Collection: "n", ID: "n", Old: old, New: next})
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if got, _ := record("n", "n"); len(got) != racers*each {
		t.Fatalf("%d racing increments left %d", racers*each, len(got))
	}
}

// swapper returns b's RecordSwapper, or fails the test.
func swapper(t *testing.T, b backplane.Backplane) backplane.RecordSwapper {
	t.Helper()
	s, ok := b.(backplane.RecordSwapper)
	if !ok {
		t.Fatalf("%T does not implement backplane.RecordSwapper", b)
	}
	return s
}
