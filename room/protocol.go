package room

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
	// retryPacket tells a client that a move failed and it stays: it
	// should try again (queue again, or reconnect) in a moment.
	retryPacket struct {
		Type   string `json:"type"` // "retry"
		Reason string `json:"reason"`
	}
	// roomOutPacket tells a player it is out of a room, and why: the
	// room ended or it left ("room_end"), or the room refused it a seat
	// ("join_refused").
	roomOutPacket struct {
		Type   string `json:"type"` // "room_end" or "join_refused"
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
