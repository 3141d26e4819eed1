package room

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/muster-gg/muster/fleet"
)

// Module extends a Host: matchmaking, lobbies, the game's own. A module
// may also implement MessageHandler, ArrivalHandler, DisconnectHandler,
// RoomEndHandler, RoomWatcher, Runner, Releaser, RoomMover and
// fleet.Drainer (or fleet.LastDrainer); the host finds them by type
// assertion. Use refuses
// a module with a method named like one of theirs that does not
// implement it (another signature, declared on *T for a module passed as
// a T, or a MessageHandler without MessageTypes), since the host would
// never call it. A module is not generic: it sees the host through
// ModuleHost, whatever the game's types, so a game's own module gets
// exactly what the built-in ones get.
type Module interface {
	// Attach is called once by Host.Use with the host the module extends.
	Attach(h ModuleHost) error
}

// Runner is a module with work of its own (a queue's matching loop): the
// host's Run starts Run and waits for it to return after ctx ends. Use
// refuses a module whose Run has another signature.
type Runner interface {
	Run(ctx context.Context) error
}

// ModuleHost is what a module uses of its host and fleet. *Host
// implements it; tests may give a module their own.
type ModuleHost interface {
	// Config is the host's configuration, defaults filled in.
	Config() Config
	// Logger is the host's logger.
	Logger() *slog.Logger
	// Codec is the codec of the host's packets.
	Codec() Codec
	// Fleet returns the bound fleet, or nil.
	Fleet() Fleet
	// Connected reports whether player id is connected here.
	Connected(id string) bool
	// Send sends p to player id if it is connected here.
	Send(id string, p Packet)
	// MovePlayer writes ho for to, then redirects player id there (see
	// Host.Move); ErrGone if id is not connected here.
	MovePlayer(ctx context.Context, id string, to fleet.Node, reason string, ho *Handoff) error
	// Open opens a room and seats info.Players in it (see Host.OpenRoom).
	Open(ctx context.Context, info Info) error
	// RoomOf returns the id of the room player id has a seat in, or "".
	RoomOf(id string) string
	// FreeLoad is the load this server may still take: the fleet's
	// max-load minus the exact current load (which counts rooms just
	// opened). math.MaxInt without a limit; may be negative.
	FreeLoad() int
	// DrainPacket is the packet that tells a player the server is
	// draining: the game's, DrainingPacket by default, or nil when the
	// game opted out.
	DrainPacket() Packet
}

// MessageHandler handles the client messages of the types it names, such
// as "queue" or "lobby.create". Use refuses a module with one of the two
// methods and not the other, or with either of another signature.
type MessageHandler interface {
	MessageTypes() []string
	// HandleMessage handles one message of c. An error closes the
	// connection with StatusBadPacket and the error's text.
	HandleMessage(ctx context.Context, c *Client, typ string, body []byte) error
}

// ArrivalHandler is told of every client that said hello: with the
// handoff written for it by the server that sent it here (Handoff.Kind is
// "" when there was none). Use refuses a module whose Arrived has another
// signature.
type ArrivalHandler interface {
	Arrived(ctx context.Context, c *Client, h Handoff)
}

// DisconnectHandler is told when a client's connection ends. Use refuses
// a module whose Disconnected has another signature.
type DisconnectHandler interface {
	Disconnected(c *Client)
}

// RoomEndHandler is told when a room ends. RoomEnded runs on the step
// worker that ended the room, so it must not block and must do no I/O
// (use Fleet.ReleaseLater, not Release): the worker's other rooms wait
// for it. Use refuses a module whose RoomEnded has another signature.
type RoomEndHandler interface {
	RoomEnded(info Info, reason string)
}

// Releaser is a module that may keep a player who is in no room: a queue
// place, a lobby, a request waiting for the move cooldown. At the end of
// a drain the host sends every player still connected in no room to
// another server (reason drain); it asks each Releaser first. Release
// lets player id go and returns the handoff that carries what the module
// kept of it (nil for nothing); or it reports moving when the module is
// sending the player elsewhere itself, and the host leaves it to the
// module. The host handles no client message from then on, so a module
// takes on nobody after its Release. Use refuses a module whose Release
// has another signature.
type Releaser interface {
	Release(id string) (ho *Handoff, moving bool)
}

// Handoff is the work that moves with a player to another server: a queue
// place, a lobby and its role, or the game's own data. Kind names the
// module that wrote it.
type Handoff struct {
	Kind string `json:"kind"`
	Data []byte `json:"data,omitempty"`
}

// moduleHooks are the optional interfaces of a module, found by type
// assertion.
var moduleHooks = []reflect.Type{
	reflect.TypeFor[Runner](),
	reflect.TypeFor[MessageHandler](),
	reflect.TypeFor[ArrivalHandler](),
	reflect.TypeFor[DisconnectHandler](),
	reflect.TypeFor[RoomEndHandler](),
	reflect.TypeFor[RoomWatcher](),
	reflect.TypeFor[Releaser](),
	reflect.TypeFor[RoomMover](),
	reflect.TypeFor[fleet.Drainer](),
	reflect.TypeFor[fleet.LastDrainer](),
}

// checkModuleHooks returns an error wrapping ErrModuleHook if m has a
// method named like one of moduleHooks' that it does not implement (see
// checkHooks).
func checkModuleHooks(m Module) error {
	return checkHooks(m, moduleSubject(m), moduleHooks)
}
