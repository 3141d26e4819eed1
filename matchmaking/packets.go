package matchmaking

// Client message types the module handles.
const (
	// MsgQueue enqueues the player: {"type":"queue","data":{"playlist":
	// "duel","rating":1500}}. The rating is optional.
	MsgQueue = "queue"
	// MsgUnqueue takes the player out of the queue: {"type":"unqueue"}.
	MsgUnqueue = "unqueue"
)

// Types of the packets the module sends.
const (
	TypeWaiting = "queue.waiting"
	TypeLeft    = "queue.left"
	TypeError   = "queue.error"
)

// HandoffKind is the room.Handoff kind of a queue place moving to another
// server.
const HandoffKind = "queue"

// WaitingPacket tells a player it waits in a playlist's queue on this
// server: sent when it enqueues and when it arrives from another server,
// with the time it has waited so far.
type WaitingPacket struct {
	Type     string `json:"type"` // TypeWaiting
	Playlist string `json:"playlist"`
	WaitedMS int64  `json:"waited_ms"`
	Node     string `json:"node,omitempty"`
}

// LeftPacket tells a player it left the queue at its request.
type LeftPacket struct {
	Type     string `json:"type"` // TypeLeft
	Playlist string `json:"playlist"`
}

// ErrorPacket tells a player why a queue message was refused; the
// connection stays open.
type ErrorPacket struct {
	Type  string `json:"type"` // TypeError
	Error string `json:"error"`
}

// Match is the room.Info.Data of a room the module opens: its playlist
// and its teams of player ids. The room's Info.Players are the same ids,
// team after team.
type Match struct {
	Playlist string
	Teams    [][]string
}

// handoff is the data of a queue place handed to another server,
// carried as a room.Handoff of HandoffKind.
type handoff struct {
	Playlist string  `json:"playlist"`
	Waited   int64   `json:"waited_ns"` // time already waited
	Rating   float64 `json:"rating"`
	From     string  `json:"from"`
	Drain    bool    `json:"drain,omitempty"` // From drains: never send it back there
}
