package lobby

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/room"
)

// errorsEnv is a host without a fleet that keeps the error packets sent
// to each player.
type errorsEnv struct {
	hosttest.NopEnv
	mu   sync.Mutex
	errs map[string][]string
}

func (e *errorsEnv) Send(id string, p room.Packet) {
	if ep, ok := p.(ErrorPacket); ok {
		e.mu.Lock()
		e.errs[id] = append(e.errs[id], ep.Error)
		e.mu.Unlock()
	}
}

// count returns how many players were sent the error err.
func (e *errorsEnv) count(err error) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, got := range e.errs {
		for _, s := range got {
			if s == err.Error() {
				n++
			}
		}
	}
	return n
}

// gatedCounter is a counter in memory whose counts (increments by more
// than 0) wait until calls from every one of n joins have reached it: all
// the joins are in flight at once, as when one address sends them on many
// connections together.
type gatedCounter struct {
	next    *memory.Backplane
	n       int64
	calls   atomic.Int64
	all     chan struct{}
	timeout <-chan time.Time
}

func (g *gatedCounter) Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	if g.calls.Add(1) == g.n {
		close(g.all)
	}
	if by > 0 {
		select {
		case <-g.all:
		case <-g.timeout:
			return 0, errors.New("the joins never were all in flight")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return g.next.Increment(ctx, key, ttl, by)
}

// However many joins with a wrong code one address has in flight at once,
// it makes CodeFailures wrong guesses; the rest are refused as locked out.
func TestConcurrentWrongCodesBoundedByCodeFailures(t *testing.T) {
	const joins, failures = 40, 3
	m, err := New(Config{CodeFailures: failures})
	if err != nil {
		t.Fatal(err)
	}
	env := &errorsEnv{errs: map[string][]string{}}
	m.kit.Env, m.kit.Logger = env, quiet
	g := &gatedCounter{next: memory.New(), n: joins, all: make(chan struct{}), timeout: time.After(10 * time.Second)}
	m.local = g
	var wg sync.WaitGroup
	for i := range joins {
		wg.Go(func() { m.joinFrom(t.Context(), fmt.Sprintf("p%d", i), "198.51.100.7", "ZZZZZ", time.Now()) })
	}
	wg.Wait()
	wrong, locked := env.count(ErrNoLobby), env.count(ErrLocked)
	if wrong != failures || locked != joins-failures {
		t.Fatalf("%d concurrent wrong joins from one address: %d wrong guesses made and %d locked out, want %d guesses and the rest locked out", joins, wrong, locked, failures)
	}
	// The refused joins are not counted: the count is the wrong codes'.
	if n, _ := g.next.Increment(t.Context(), "lobby-code-fail:198.51.100.7", time.Minute, 0); n != failures {
		t.Fatalf("the address's count after %d wrong codes and %d refused joins is %d, want %d", wrong, locked, n, failures)
	}
	m.joinFrom(t.Context(), "late", "198.51.100.7", "ZZZZZ", time.Now())
	if got := env.errs["late"]; len(got) != 1 || got[0] != ErrLocked.Error() {
		t.Fatalf("join after %d wrong codes: %v, want %q", wrong, got, ErrLocked)
	}
}

// Wrong codes count an IPv6 client by its /64, and an IPv4-mapped address
// as its IPv4 address: a stranger with a /64 does not start the lockout
// afresh at each of its 2^64 addresses.
func TestWrongCodesCountIPv6By64(t *testing.T) {
	m, err := New(Config{CodeFailures: 2})
	if err != nil {
		t.Fatal(err)
	}
	env := &errorsEnv{errs: map[string][]string{}}
	m.kit.Env, m.kit.Logger = env, quiet
	for i, c := range []struct {
		ip   string
		want error
	}{
		{"2001:db8:1:2::1", ErrNoLobby},
		{"2001:db8:1:2:ffff::2", ErrNoLobby},
		{"2001:db8:1:2::3", ErrLocked},
		{"2001:db8:1:3::1", ErrNoLobby}, // the next /64 counts on its own
		{"::ffff:192.0.2.1", ErrNoLobby},
		{"192.0.2.1", ErrNoLobby},
		{"192.0.2.1", ErrLocked},
		{"192.0.2.2", ErrNoLobby},
	} {
		id := fmt.Sprintf("p%d", i)
		m.joinFrom(t.Context(), id, c.ip, "ZZZZZ", time.Now())
		if got := env.errs[id]; len(got) != 1 || got[0] != c.want.Error() {
			t.Fatalf("wrong code #%d, from %s: %v, want %q", i+1, c.ip, got, c.want)
		}
	}
}
