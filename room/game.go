package room

// Packet is a message for clients, encoded by the host's Codec (JSON by
// default). The game defines its packets.
type Packet = any

// Game is what a game implements for the room host. Sim is the state of
// one room, Input a player's input, Player the game's per-player value.
// Sim must be a pointer or a map (New refuses a plain value with
// ErrSimKind): Room.Sim returns it by value, so a struct's changes would
// be made to a copy and lost.
//
// Every hook of one room runs on the worker stepping that room, one at a
// time, so a Sim needs no locks. Hooks must not block.
//
// A game may also implement the optional hooks, each a one-method
// interface (Migrator has two methods): BeforeStepper, AfterStepper,
// RoomEnder, Admitter, Loader, Redirector, DrainNotifier, Awayer,
// Returner and Migrator. New checks the game's method set once: a method
// named like one of them (BeforeSteps, AfterSteps, RoomEnded, Admit,
// LoadOf, Redirect, ServerDraining, PlayerAway, PlayerBack, Snapshot,
// Restore) whose signature does not match
// the hook's, with the game's own Sim, Input and Player, is an error
// (ErrHook), never a hook silently skipped.
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

// Reasons for a redirect.
const (
	ReasonRejoin = "rejoin"
	ReasonQueue  = "queue"
	ReasonLobby  = "lobby"
	ReasonDrain  = "drain"
	// ReasonMigrate (migrate.go): the player's room moved there.
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
	// Reason is one of ReasonRejoin, ReasonQueue, ReasonLobby,
	// ReasonDrain, ReasonMigrate.
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
