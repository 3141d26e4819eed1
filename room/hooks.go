package room

import (
	"fmt"
	"reflect"
	"regexp"
)

// The optional hooks of a Game are one-method interfaces that the host
// finds by type assertion. A method whose name is a hook's but whose
// signature is not (other type arguments, another parameter, or declared
// on *T for a game passed as a T) would never match and never be called,
// without a word: New refuses such a game instead (checkHooks).

// BeforeStepper is an optional hook of a Game, called once before the
// steps a worker runs for a room in one pass (usually one; more when the
// room catches up).
type BeforeStepper[Sim, Input, Player any] interface {
	BeforeSteps(r *Room[Sim, Input, Player])
}

// AfterStepper is an optional hook of a Game, called once after the steps
// of a pass: the place to broadcast the room's state.
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
}

// findHooks checks game's method set against the optional hooks
// (checkHooks) and returns those it implements.
func findHooks[Sim, Input, Player any](game Game[Sim, Input, Player]) (gameHooks[Sim, Input, Player], error) {
	var hs gameHooks[Sim, Input, Player]
	err := checkHooks(game, []reflect.Type{
		reflect.TypeFor[BeforeStepper[Sim, Input, Player]](),
		reflect.TypeFor[AfterStepper[Sim, Input, Player]](),
		reflect.TypeFor[RoomEnder[Sim, Input, Player]](),
		reflect.TypeFor[Admitter[Sim, Input, Player]](),
		reflect.TypeFor[Loader[Sim]](),
		reflect.TypeFor[Redirector](),
		reflect.TypeFor[DrainNotifier](),
	})
	if err != nil {
		return hs, err
	}
	hs.before, _ = game.(BeforeStepper[Sim, Input, Player])
	hs.after, _ = game.(AfterStepper[Sim, Input, Player])
	hs.loader, _ = game.(Loader[Sim])
	hs.ender, _ = game.(RoomEnder[Sim, Input, Player])
	hs.admit, _ = game.(Admitter[Sim, Input, Player])
	return hs, nil
}

// checkHooks returns an error wrapping ErrHook for the first of ifaces
// (the hooks' one-method interfaces) that game has a method for by name
// but does not implement: the method's signature differs, or it is
// declared on *T and game is a T, whose method set lacks it.
func checkHooks(game any, ifaces []reflect.Type) error {
	t := reflect.TypeOf(game)
	if t == nil {
		return nil
	}
	for _, hook := range ifaces {
		want := hook.Method(0)
		if t.Implements(hook) {
			continue
		}
		if got, ok := t.MethodByName(want.Name); ok {
			return hookMismatch(want, got)
		}
		if t.Kind() == reflect.Pointer {
			continue
		}
		pt := reflect.PointerTo(t)
		if got, ok := pt.MethodByName(want.Name); ok {
			if !pt.Implements(hook) {
				return hookMismatch(want, got)
			}
			return fmt.Errorf("%w: game method %s is declared on %s, but New was given a %s, whose method set lacks it; pass a %s to have it called as the %s hook",
				ErrHook, want.Name, typeName(pt), typeName(t), typeName(pt), want.Name)
		}
	}
	return nil
}

// hookMismatch is the error for a game method got named like the hook
// method want, with another signature.
func hookMismatch(want, got reflect.Method) error {
	return fmt.Errorf("%w: game method %s has signature %s; want %s to be called as the %s hook",
		ErrHook, want.Name, typeName(methodSignature(got)), typeName(want.Type), want.Name)
}

// methodSignature is the signature of method m of a concrete type, as it
// is called: without its receiver.
func methodSignature(m reflect.Method) reflect.Type {
	ft := m.Type
	in := make([]reflect.Type, 0, ft.NumIn()-1)
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	out := make([]reflect.Type, ft.NumOut())
	for i := range out {
		out[i] = ft.Out(i)
	}
	return reflect.FuncOf(in, out, ft.IsVariadic())
}

// importPath matches the import path before a package name in a type's
// name: reflect spells the type arguments of a generic type with theirs
// (room.Room[*example.com/game.Sim,...]).
var importPath = regexp.MustCompile(`(?:[\w.~-]+/)+(\w+\.)`)

// typeName is t's name with package names in place of import paths.
func typeName(t reflect.Type) string {
	return importPath.ReplaceAllString(t.String(), "$1")
}
