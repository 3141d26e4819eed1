package lobby

import (
	"context"
	"time"

	"github.com/muster-gg/muster/internal/addrkey"
	"github.com/muster-gg/muster/room"
)

// counter counts wrong codes: once for the fleet, or in memory.
func (m *Module) counter() room.Counter {
	if f := m.kit.Env.Fleet(); f != nil {
		return f
	}
	return m.local
}

// joinFrom is player id's join of the lobby code raw, asked from address
// ip, unless the address is locked out for wrong codes. The address counts
// by its addrkey, as room's limits count it: an IPv6 client by its /64.
//
// The join counts towards the address's lockout before the code is
// looked at, and is given back when the code was not wrong: however many
// joins one address has in flight at once, on however many servers, it
// tries at most Config.CodeFailures wrong codes per window. A counter
// that fails locks nobody out.
func (m *Module) joinFrom(ctx context.Context, id, ip, raw string, arrived time.Time) {
	if ip == "" {
		m.join(ctx, id, raw, arrived)
		return
	}
	key := "lobby-code-fail:" + addrkey.Of(ip)
	n, err := m.counter().Increment(ctx, key, m.cfg.CodeLockout, 1)
	if err != nil {
		m.kit.Logger.Debug("count a lobby join", "err", err)
		m.join(ctx, id, raw, arrived)
		return
	}
	if n > int64(m.cfg.CodeFailures) {
		m.giveBack(ctx, key)
		m.fail(id, ErrLocked)
		return
	}
	if !m.join(ctx, id, raw, arrived) {
		m.giveBack(ctx, key)
	}
}

// giveBack takes back a join counted under key that tried no wrong code.
func (m *Module) giveBack(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	n, err := m.counter().Increment(ctx, key, m.cfg.CodeLockout, -1)
	if err == nil && n < 0 {
		// The count's window ended while the join was in flight (or the
		// fleet began counting here): there was nothing to give back,
		// and a count below zero would be a free wrong code.
		_, err = m.counter().Increment(ctx, key, m.cfg.CodeLockout, 1)
	}
	if err != nil {
		m.kit.Logger.Debug("give back a lobby join", "err", err)
	}
}
