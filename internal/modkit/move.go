package modkit

import (
	"context"
	"encoding/json"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/room"
)

// Encode returns d, a module's handoff data, as the host carries it: a
// room.Handoff of kind with d in JSON.
func Encode(kind string, d any) (*room.Handoff, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return &room.Handoff{Kind: kind, Data: data}, nil
}

// Decode decodes into d the data of ho, a handoff player id arrived with,
// and reports whether d is to be taken: ho is of kind (another module's
// handoff is not), and decodes. One that does not decode is logged and
// dropped.
func (b *Base) Decode(id string, ho room.Handoff, kind string, d any) bool {
	if ho.Kind != kind {
		return false
	}
	if err := json.Unmarshal(ho.Data, d); err != nil {
		b.Logger.Warn("undecodable "+kind+" handoff dropped", "player_id", id, "err", err)
		return false
	}
	return true
}

// Move hands player id to server to for reason, with d as its handoff of
// kind: the host writes the handoff for to, then redirects the player
// (room.ModuleHost.MovePlayer).
func (b *Base) Move(ctx context.Context, id string, to fleet.Node, reason, kind string, d any) error {
	ho, err := Encode(kind, d)
	if err != nil {
		return err
	}
	return b.Env.MovePlayer(ctx, id, to, reason, ho)
}

// Cooldown is the host's move cooldown (room.Config.MoveCooldown) at one
// moment: the host refuses to move a player within it of its arrival.
type Cooldown struct {
	now time.Time
	d   time.Duration
}

// Cooldown returns the move cooldown at now.
func (b *Base) Cooldown(now time.Time) Cooldown {
	return Cooldown{now: now, d: b.Env.Config().MoveCooldown}
}

// Over reports whether the cooldown of a player who arrived at arrived is
// over, so that the host would move it.
func (c Cooldown) Over(arrived time.Time) bool { return !c.now.Before(arrived.Add(c.d)) }

// Each calls f with every item and its index, at most limit calls at
// once, and returns when they have all returned. The modules make their
// backplane calls (hand-overs, rooms opened) together this way: each may
// wait for its deadline while Redis is slow or stalled, and one after
// another the last of k would wait k deadlines; the limit leaves most of
// the store's connections to the heartbeat and the rooms.
func Each[T any](limit int, items []T, f func(i int, item T)) {
	var g errgroup.Group
	g.SetLimit(limit)
	for i, it := range items {
		g.Go(func() error {
			f(i, it)
			return nil
		})
	}
	_ = g.Wait() // no call returns an error
}
