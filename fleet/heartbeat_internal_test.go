package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
)

// scannedNow returns how many claims the heartbeat has gone over while it
// held the fleet's lock.
func (f *Fleet) scannedNow() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scanned
}

// The heartbeat of a server that holds many claims goes over only the
// claims that changed since the last heartbeat while it holds the fleet's
// lock: every Claim, Holds and Release, on a player's connection or a
// room's start, waits for that lock, and going over all 20,000 claims held
// it for milliseconds every second.
func TestHeartbeatLockGrowsWithChangesNotClaims(t *testing.T) {
	bp := &recordReassert{Backplane: memory.New()}
	f, ids := holding(t, bp, 20000) // its first heartbeat may list them
	ctx := t.Context()
	for round := range 3 {
		before := f.scannedNow()
		if err := f.Claim(ctx, KindPlayer, fmt.Sprintf("new%d", round)); err != nil {
			t.Fatal(err)
		}
		if err := f.Release(ctx, KindPlayer, ids[round]); err != nil {
			t.Fatal(err)
		}
		f.ReleaseLater(KindPlayer, ids[100+round])
		bp.reset()
		if err := f.step(ctx); err != nil {
			t.Fatal(err)
		}
		// Three claims changed; the heartbeat may go over each in its two
		// turns under the lock.
		if n := f.scannedNow() - before; n > 6 {
			t.Fatalf("heartbeat %d went over %d claims holding the fleet's lock; 3 changed since the last", round+2, n)
		}
	}
	f.mu.Lock()
	held := maps.Clone(f.held)
	f.mu.Unlock()
	if want := len(ids) - 3; len(held) != want { // 3 new, 6 released
		t.Fatalf("%d claims held, want %d", len(held), want)
	}
	bp.checkReasserted(t, held)
}

// recordReassert is a backplane that notes the claims its Reasserts are
// given since reset (a heartbeat re-asserts many claims in several
// calls). Once called is set, its Reassert says so and then waits until
// the test lets it go on.
type recordReassert struct {
	*memory.Backplane
	called chan struct{}
	goOn   chan struct{}
	// after, if set, runs once the store has answered, before the fleet
	// has the answer.
	after func()

	mu   sync.Mutex
	keys map[backplane.Key]bool // the Reasserts' since reset
}

// reset forgets the claims re-asserted so far.
func (b *recordReassert) reset() {
	b.mu.Lock()
	b.keys = nil
	b.mu.Unlock()
}

func (b *recordReassert) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...backplane.Key) ([]backplane.Key, error) {
	b.mu.Lock()
	if b.keys == nil {
		b.keys = make(map[backplane.Key]bool, len(keys))
	}
	for _, k := range keys {
		b.keys[k] = true
	}
	b.mu.Unlock()
	if b.called != nil {
		b.called <- struct{}{}
		<-b.goOn
	}
	lost, err := b.Backplane.Reassert(ctx, owner, lease, keys...)
	if b.after != nil {
		b.after()
	}
	return lost, err
}

// checkReasserted fails unless the Reasserts since reset were given
// exactly held.
func (b *recordReassert) checkReasserted(t *testing.T, held map[backplane.Key]bool) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !maps.Equal(b.keys, held) {
		t.Fatalf("re-asserted %d claims, not the %d held", len(b.keys), len(held))
	}
}

// What happens to claims while a heartbeat's re-assertion is in flight is
// sorted out when it returns: a claim released meanwhile, which the
// re-assertion may have written back, is released again unless another
// server has it; one claimed again, or claimed anew, stays held; one another
// server took over is dropped and reported, unless it was released already.
func TestClaimsChangedDuringReassert(t *testing.T) {
	mem := memory.New()
	bp := &recordReassert{Backplane: mem, called: make(chan struct{}), goOn: make(chan struct{})}
	f, err := New(Config{NodeID: "s0"}, bp, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(Config{NodeID: "s1"}, mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lost []string
	f.OnClaimLost(func(kind, id string) {
		mu.Lock()
		lost = append(lost, id)
		mu.Unlock()
	})
	ctx := t.Context()
	if err := other.step(ctx); err != nil { // live
		t.Fatal(err)
	}
	if err := f.Claim(ctx, KindPlayer, "released", "releasedLater", "again", "taken", "takenReleased", "kept"); err != nil {
		t.Fatal(err)
	}
	stepped := make(chan error)
	go func() { stepped <- f.step(ctx) }()
	<-bp.called
	if err := f.Release(ctx, KindPlayer, "released", "again", "takenReleased"); err != nil {
		t.Fatal(err)
	}
	f.ReleaseLater(KindPlayer, "releasedLater")
	if err := f.Claim(ctx, KindPlayer, "again", "new"); err != nil {
		t.Fatal(err)
	}
	if err := other.Claim(ctx, KindPlayer, "taken", "takenReleased"); err != nil {
		t.Fatal(err)
	}
	close(bp.goOn)
	if err := <-stepped; err != nil {
		t.Fatal(err)
	}

	f.mu.Lock()
	pending := idsOf(f.pending)
	held := maps.Clone(f.held)
	f.mu.Unlock()
	if w := []string{"released", "releasedLater"}; !slices.Equal(pending, w) {
		t.Errorf("to release again: %v, want %v", pending, w)
	}
	if w := []string{"again", "kept", "new"}; !slices.Equal(idsOf(held), w) {
		t.Errorf("held: %v, want %v", idsOf(held), w)
	}
	mu.Lock()
	if !slices.Equal(lost, []string{"taken"}) {
		t.Errorf("OnClaimLost saw %v, want [taken]", lost)
	}
	mu.Unlock()

	// The next heartbeat re-asserts exactly the claims held.
	bp.reset()
	go func() { stepped <- f.step(ctx) }()
	<-bp.called // and goes on: goOn is closed
	if err := <-stepped; err != nil {
		t.Fatal(err)
	}
	bp.checkReasserted(t, held)
}

// A claim another server took while a re-assertion was in flight, and
// that this server claimed back (Claim writes over) after the store
// answered, stays held and is not reported lost: the answer is older than
// the claim. A room that moves from a server and back within a heartbeat
// lost its players without it.
func TestClaimTakenBackDuringReassert(t *testing.T) {
	mem := memory.New()
	bp := &recordReassert{Backplane: mem, called: make(chan struct{}), goOn: make(chan struct{})}
	f, err := New(Config{NodeID: "s0"}, bp, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(Config{NodeID: "s1"}, mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lost []string
	f.OnClaimLost(func(kind, id string) {
		mu.Lock()
		lost = append(lost, id)
		mu.Unlock()
	})
	ctx := t.Context()
	if err := other.step(ctx); err != nil { // live
		t.Fatal(err)
	}
	if err := f.Claim(ctx, KindPlayer, "back", "taken"); err != nil {
		t.Fatal(err)
	}
	bp.after = func() {
		if err := f.Claim(ctx, KindPlayer, "back"); err != nil {
			t.Error(err)
		}
	}
	stepped := make(chan error)
	go func() { stepped <- f.step(ctx) }()
	<-bp.called
	if err := other.Claim(ctx, KindPlayer, "back", "taken"); err != nil {
		t.Fatal(err)
	}
	close(bp.goOn)
	if err := <-stepped; err != nil {
		t.Fatal(err)
	}
	if !f.Holds(KindPlayer, "back") {
		t.Error("the claim taken back after the store's answer was dropped")
	}
	if owner, err := mem.Locate(ctx, backplane.Key{Kind: KindPlayer, ID: "back"}); err != nil || owner != "s0" {
		t.Errorf("the store has back at %q (%v), want s0", owner, err)
	}
	mu.Lock()
	if !slices.Equal(lost, []string{"taken"}) {
		t.Errorf("OnClaimLost saw %v, want [taken]", lost)
	}
	mu.Unlock()
}

// idsOf returns the ids of the keys in set, sorted.
func idsOf(set map[backplane.Key]bool) []string {
	var ids []string
	for k := range set {
		ids = append(ids, k.ID)
	}
	slices.Sort(ids)
	return ids
}

// holding returns a fleet on bp that holds n player claims, p0 to p<n-1>,
// and has made its first heartbeat.
func holding(tb testing.TB, bp backplane.Backplane, n int) (*Fleet, []string) {
	tb.Helper()
	f, err := New(Config{NodeID: "s0"}, bp, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%d", i)
	}
	if err := f.Claim(tb.Context(), KindPlayer, ids...); err != nil {
		tb.Fatal(err)
	}
	if err := f.step(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	return f, ids
}
