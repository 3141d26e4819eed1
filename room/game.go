package room

// Packet is a message for clients, encoded by the host's Codec (JSON by
// default). The game defines its packets.
type Packet = any

// Game is what a game implements for the room host. Sim is the state of
// one room, Input a player's input, Player the game's per-player value.
//
// Every hook of one room runs on the worker stepping that room, one at a
// time, so a Sim needs no locks. Hooks must not block.
type Game[Sim, Input, Player any] interface {
	// NewSim makes the state of a new room.
	NewSim(info Info) Sim

	// Join seats the player id in the room and returns the game's value
	// for it. A player who reconnects takes its seat back without a new
	// Join.
	Join(r *Room[Sim, Input, Player], id string) Player

	// Leave removes a seated player for good.
	Leave(r *Room[Sim, Input, Player], p Player)

	// Input applies one input of a seated player, in arrival order, before
	// the next step.
	Input(r *Room[Sim, Input, Player], p Player, in Input)

	// FixedStep advances the room by one step of the fixed rate. The game
	// ends the room with r.End.
	FixedStep(r *Room[Sim, Input, Player])
}

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

// Reasons for a redirect.
const (
	ReasonRejoin = "rejoin"
	ReasonQueue  = "queue"
	ReasonLobby  = "lobby"
	ReasonDrain  = "drain"
)

// Redirect describes a move of a client to another server.
type Redirect struct {
	// NodeID is the target server; the client reconnects with
	// ?{NodeParam}={NodeID}.
	NodeID string
	// NodeParam is the query parameter name (fleet.node-param).
	NodeParam string
	// PublicAddress is the target's own public address, when it has one.
	PublicAddress string
	// Reason is one of ReasonRejoin, ReasonQueue, ReasonLobby, ReasonDrain.
	Reason string
	// PlayerID is the player moved.
	PlayerID string
	// Ticket is a fresh ticket for the player, for its reconnection.
	Ticket string
	// Query is the ready reconnect query, without "?": NodeParam=NodeID
	// and ticket=Ticket, URL-encoded.
	Query string
}

// Info describes a room when it is opened.
type Info struct {
	// ID is the room's id. One the host makes (when Open is given none) is
	// unique across the fleet and over restarts, so it can key a saved
	// result; one a game or module gives is kept as given, and must be
	// unique among the rooms open on the server.
	ID string
	// Kind says who opened it, e.g. a playlist name or "lobby".
	Kind string
	// Players are the ids seated when the room opens.
	Players []string
	// Data is free for the module or game that opens the room.
	Data any
}
