package matchmaking

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/muster-gg/muster/room"
)

// MessageTypes implements room.MessageHandler.
func (m *Module) MessageTypes() []string { return []string{MsgQueue, MsgUnqueue} }

// HandleMessage implements room.MessageHandler. A refused request is
// answered with an ErrorPacket; only an undecodable one closes the
// connection.
func (m *Module) HandleMessage(ctx context.Context, c *room.Client, typ string, body []byte) error {
	switch typ {
	case MsgQueue:
		var req struct {
			Playlist string   `json:"playlist"`
			Rating   *float64 `json:"rating"`
		}
		if err := m.kit.Codec.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		rating := req.Rating
		// A seated player is refused by enqueue anyway: it costs the
		// game's records no look-up.
		if q := m.queues[req.Playlist]; q != nil && q.pl.Rating.enabled() && m.cfg.Ratings != nil && m.kit.Env.RoomOf(c.ID()) == "" {
			r, err := m.rate(ctx, c, req.Playlist)
			if err != nil {
				m.kit.Logger.Warn("Ratings failed; the player is not queued", "player_id", c.ID(), "playlist", req.Playlist, "err", err)
				m.fail(c.ID(), ErrRating)
				return nil
			}
			rating = &r
		}
		m.enqueue(c.ID(), req.Playlist, rating, c.CooldownFrom(), time.Now())
	case MsgUnqueue:
		m.unqueue(c.ID())
	}
	return nil
}

// ratingsTimeout bounds a call of Config.Ratings; a variable for tests.
var ratingsTimeout = 5 * time.Second

// rate asks Config.Ratings for the rating of client c in playlist, with a
// context that ends after ratingsTimeout or when the server closes c's
// connection, whichever comes first: the call holds c's reads, so c's
// own end is noticed by its pings, not by its reads.
func (m *Module) rate(ctx context.Context, c *room.Client, playlist string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, ratingsTimeout)
	defer cancel()
	go func() {
		select {
		case <-c.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	r, err := m.cfg.Ratings(ctx, c.ID(), playlist)
	if err == nil && (math.IsNaN(r) || math.IsInf(r, 0)) {
		err = fmt.Errorf("rating %v is not finite", r)
	}
	return r, err
}

// Arrived implements room.ArrivalHandler: a player who brings a queue
// handoff waits on here, with the time it already waited.
func (m *Module) Arrived(_ context.Context, c *room.Client, ho room.Handoff) {
	m.arrive(c.ID(), ho, c.CooldownFrom(), time.Now())
}

// Disconnected implements room.DisconnectHandler: a player whose
// connection ends leaves the queue, unless it is being matched or moved,
// or has already connected again.
func (m *Module) Disconnected(c *room.Client) {
	if m.kit.Env.Connected(c.ID()) {
		return // replaced by a newer connection that keeps the place
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.players[c.ID()]; e != nil && e.state == waiting {
		e.q.remove(e)
		delete(m.players, e.id)
	}
}

// enqueue puts player id in playlist's queue; a refusal is sent to it.
func (m *Module) enqueue(id, playlist string, rating *float64, arrived, now time.Time) {
	if err := m.tryEnqueue(id, playlist, rating, arrived, now); err != nil {
		m.fail(id, err)
		return
	}
	m.kit.Env.Send(id, WaitingPacket{Type: TypeWaiting, Playlist: playlist, Node: m.kit.Self()})
	m.kickRun()
}

// tryEnqueue puts player id in playlist's queue, or says why not.
func (m *Module) tryEnqueue(id, playlist string, rating *float64, arrived, now time.Time) error {
	if m.kit.Env.RoomOf(id) != "" {
		return ErrSeated
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[playlist]
	if q == nil {
		return ErrUnknownPlaylist
	}
	if old := m.players[id]; old != nil {
		if old.state != waiting {
			return ErrMatched
		}
		old.q.remove(old)
		delete(m.players, id)
	}
	e := &entry{id: id, rating: q.pl.Rating.Default, since: now.UnixNano(), arrived: arrived}
	if rating != nil {
		e.rating = *rating
	}
	q.add(e)
	m.players[id] = e
	return nil
}

// unqueue takes player id out of its queue, at its request.
func (m *Module) unqueue(id string) {
	m.mu.Lock()
	e := m.players[id]
	var err error
	switch {
	case e == nil:
		m.mu.Unlock()
		return
	case e.state != waiting:
		err = ErrMatched
	default:
		e.q.remove(e)
		delete(m.players, id)
	}
	m.mu.Unlock()
	if err != nil {
		m.fail(id, err)
		return
	}
	m.kit.Env.Send(id, LeftPacket{Type: TypeLeft, Playlist: e.q.pl.Name})
}

// fail sends player id the refusal err.
func (m *Module) fail(id string, err error) {
	m.kit.Env.Send(id, ErrorPacket{Type: TypeError, Error: err.Error()})
}
