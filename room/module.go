package room

import (
	"context"
)

// Module extends a Host: matchmaking, lobbies, the game's own. A module
// may also implement MessageHandler, ArrivalHandler, DisconnectHandler,
// RoomEndHandler and fleet.Drainer; the host finds them by type
// assertion.
type Module[Sim, Input, Player any] interface {
	// Attach is called once by Host.Use with the host the module extends.
	Attach(h *Host[Sim, Input, Player]) error
}

// MessageHandler handles the client messages of the types it names, such
// as "queue" or "lobby.create".
type MessageHandler interface {
	MessageTypes() []string
	// HandleMessage handles one message of c. An error closes the
	// connection with StatusBadPacket and the error's text.
	HandleMessage(ctx context.Context, c *Client, typ string, body []byte) error
}

// ArrivalHandler is told of every client that said hello: with the
// handoff written for it by the server that sent it here (Handoff.Kind is
// "" when there was none).
type ArrivalHandler interface {
	Arrived(ctx context.Context, c *Client, h Handoff)
}

// DisconnectHandler is told when a client's connection ends.
type DisconnectHandler interface {
	Disconnected(c *Client)
}

// RoomEndHandler is told when a room ends.
type RoomEndHandler interface {
	RoomEnded(info Info, reason string)
}

// Handoff is the work that moves with a player to another server: a queue
// place, a lobby and its role, or the game's own data. Kind names the
// module that wrote it.
type Handoff struct {
	Kind string `json:"kind"`
	Data []byte `json:"data,omitempty"`
}

// The host's own packets.
type (
	welcomePacket struct {
		Type   string `json:"type"` // "welcome"
		Node   string `json:"node,omitempty"`
		Player string `json:"player"`
		Room   string `json:"room,omitempty"`
	}
	roomPacket struct {
		Type string `json:"type"` // "room"
		Room string `json:"room"`
		Kind string `json:"kind,omitempty"`
	}
	endPacket struct {
		Type   string `json:"type"` // "room_end"
		Room   string `json:"room"`
		Reason string `json:"reason"`
	}
)

// Client message types the host handles itself.
const (
	msgHello = "hello"
	msgInput = "input"
	msgLeave = "leave"
)

// hello is the body of a client's first message.
type hello struct {
	// Mode is "new" or "rejoin".
	Mode string `json:"mode"`
}
