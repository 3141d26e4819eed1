package room

// A seated player whose connection ends keeps its seat: it may come back
// (to this server, or to another that sends it here) within the host's
// AwayTimeout, and the room ends (ReasonAbandoned) only when every player
// has been away that long. A game that must act on one absent player (a
// turn-based game whose player to move vanished) implements the optional
// presence hooks, Awayer and Returner, and reads Room.Present.

// Awayer is an optional hook of a Game, called on the room's worker, in
// order with the room's other events, when the connection of a seated
// player (whose Join has run) ends. The seat is kept: the player may come
// back (Returner) until the room ends. A player whose connection is
// replaced by a newer one (it reconnected before the old one was seen
// gone) is not away.
type Awayer[Sim, Input, Player any] interface {
	PlayerAway(r *Room[Sim, Input, Player], p Player)
}

// Returner is an optional hook of a Game, called on the room's worker
// when a player that PlayerAway was called for is connected to its seat
// again. Every PlayerBack follows one PlayerAway for the same player.
type Returner[Sim, Input, Player any] interface {
	PlayerBack(r *Room[Sim, Input, Player], p Player)
}

// The events that carry presence to the room's worker, after evInput.
const (
	evAway eventKind = evInput + 1 + iota
	evBack
)

// Present reports whether player id is seated in the room and connected
// to it now. A player seated on a server it is still on its way to (a
// match opened here for it) is not present until it arrives. Safe to call
// from any goroutine.
func (r *Room[Sim, Input, Player]) Present(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seats[id]
	return s != nil && s.client != nil
}

// presenceLocked queues a presence event (evAway, evBack) of player id
// for the room's worker, when the game has a presence hook. r.mu must be
// held.
func (r *Room[Sim, Input, Player]) presenceLocked(kind eventKind, id string) {
	if r.ended || (r.host.away == nil && r.host.back == nil) {
		return
	}
	r.inbox = append(r.inbox, event[Input]{kind: kind, id: id})
	r.dirty.Store(true)
}

// presence runs the game's PlayerAway or PlayerBack for seat s, on the
// worker: PlayerAway once a joined player went away, PlayerBack only
// after a PlayerAway, so that the two alternate.
func (r *Room[Sim, Input, Player]) presence(kind eventKind, s *seat[Player]) {
	h := r.host
	if !s.joined {
		return
	}
	switch {
	case kind == evAway && !s.awayTold:
		s.awayTold = true
		if h.away != nil {
			h.away.PlayerAway(r, s.player)
		}
	case kind == evBack && s.awayTold:
		s.awayTold = false
		if h.back != nil {
			h.back.PlayerBack(r, s.player)
		}
	}
}
