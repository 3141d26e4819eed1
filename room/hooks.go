package room

import "reflect"

// The optional hooks of a Game are one-method interfaces that the host
// finds by type assertion. A method whose name is a hook's but whose
// signature is not (other type arguments, another parameter, or declared
// on *T for a game passed as a T) would never match and never be called,
// without a word: New refuses such a game instead (checkHooks, in
// hookcheck.go).

// BeforeStepper is an optional hook of a Game, called once at the start
// of each pass a worker runs for a room, before the pass's queued events
// (Join, Leave, Input, the presence hooks) and its steps: one step
// usually, up to Config.MaxCatchUp when the room fell behind.
type BeforeStepper[Sim, Input, Player any] interface {
	BeforeSteps(r *Room[Sim, Input, Player])
}

// AfterStepper is an optional hook of a Game, called once per pass, after
// the pass's events and all its steps: after one FixedStep usually, after
// several (up to Config.MaxCatchUp) when the room catches up, so r.Step()
// is the last step run and need not be one more than at the last call. It
// runs before the end the pass asked for (End) takes effect: the players
// still hear what it broadcasts. The place to broadcast the room's state;
// a game that wants a state every n steps tests r.Step() there, knowing a
// catch-up pass may skip a multiple of n.
type AfterStepper[Sim, Input, Player any] interface {
	AfterSteps(r *Room[Sim, Input, Player])
}

// RoomEnder is an optional hook of a Game, called once when a room ends,
// whatever ends it: the game's End, the drain timeout (ReasonDrained),
// abandonment (ReasonAbandoned), a panic of the game (ReasonPanic) or the
// host stopping (ReasonStopped). The room's Sim and Players are still
// there: the place to save results. It runs on the room's step worker (or
// in Run once the workers have stopped), so it must not block: hand the
// results to a goroutine of the game's own. A panic in it is logged.
type RoomEnder[Sim, Input, Player any] interface {
	RoomEnded(r *Room[Sim, Input, Player], reason string)
}

// Admitter is an optional hook of a Game that may refuse a player a seat
// (the match has started, the player is banned from it). Admit runs on
// the room's worker before the player's Join, for the players a room
// opens with and for late joiners; an error refuses the seat: the player
// is unseated and told {type:"join_refused", room, reason: the error's
// text}, and Join never runs.
type Admitter[Sim, Input, Player any] interface {
	Admit(r *Room[Sim, Input, Player], id string) error
}

// Loader is an optional hook of a Game that weighs a room for the server's
// capacity. Without it a room weighs as many as its seated players.
type Loader[Sim any] interface {
	LoadOf(sim Sim) int
}

// Redirector is an optional hook of a Game: the packet that tells a client
// to reconnect to another server. Without it the host sends
// RedirectPacket, so a fleet moves players (to their room's server, to a
// match, out of a draining server). A game opts out of every move by
// implementing Redirect and returning nil: nobody is ever moved, and Run
// logs a warning when a fleet is bound.
type Redirector interface {
	Redirect(r Redirect) Packet
}

// DrainNotifier is an optional hook of a Game: the packet sent to every
// player still in a room when the server's drain times out, shortly before
// the room is closed, and to waiting players with nowhere to go. Without
// it the host sends DrainingPacket; a ServerDraining that returns nil
// sends nothing.
type DrainNotifier interface {
	ServerDraining() Packet
}

// gameHooks are the game's optional hooks the host calls from its step
// workers, found once by New.
type gameHooks[Sim, Input, Player any] struct {
	before BeforeStepper[Sim, Input, Player]
	after  AfterStepper[Sim, Input, Player]
	loader Loader[Sim]
	ender  RoomEnder[Sim, Input, Player]
	admit  Admitter[Sim, Input, Player]
	away   Awayer[Sim, Input, Player]   // presence.go
	back   Returner[Sim, Input, Player] // presence.go
	// migrator moves rooms to other servers (snapshot.go).
	migrator Migrator[Sim, Input, Player]
}

// findHooks checks game's method set against the optional hooks
// (checkHooks) and returns those it implements.
func findHooks[Sim, Input, Player any](game Game[Sim, Input, Player]) (gameHooks[Sim, Input, Player], error) {
	var hs gameHooks[Sim, Input, Player]
	err := checkHooks(game, gameSubject, []reflect.Type{
		reflect.TypeFor[BeforeStepper[Sim, Input, Player]](),
		reflect.TypeFor[AfterStepper[Sim, Input, Player]](),
		reflect.TypeFor[RoomEnder[Sim, Input, Player]](),
		reflect.TypeFor[Admitter[Sim, Input, Player]](),
		reflect.TypeFor[Loader[Sim]](),
		reflect.TypeFor[Redirector](),
		reflect.TypeFor[DrainNotifier](),
		reflect.TypeFor[Awayer[Sim, Input, Player]](),
		reflect.TypeFor[Returner[Sim, Input, Player]](),
		reflect.TypeFor[Migrator[Sim, Input, Player]](),
	})
	if err != nil {
		return hs, err
	}
	hs.before, _ = game.(BeforeStepper[Sim, Input, Player])
	hs.after, _ = game.(AfterStepper[Sim, Input, Player])
	hs.loader, _ = game.(Loader[Sim])
	hs.ender, _ = game.(RoomEnder[Sim, Input, Player])
	hs.admit, _ = game.(Admitter[Sim, Input, Player])
	hs.away, _ = game.(Awayer[Sim, Input, Player])
	hs.back, _ = game.(Returner[Sim, Input, Player])
	hs.migrator, _ = game.(Migrator[Sim, Input, Player])
	return hs, nil
}
