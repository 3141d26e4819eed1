package lobby

// Client message types the module handles.
const (
	// MsgCreate creates a lobby with the player as its host:
	// {"type":"lobby.create"}.
	MsgCreate = "lobby.create"
	// MsgJoin joins the lobby of a code typed on any server:
	// {"type":"lobby.join","data":{"code":"K7QXM"}}.
	MsgJoin = "lobby.join"
	// MsgLeave leaves the lobby: {"type":"lobby.leave"}.
	MsgLeave = "lobby.leave"
	// MsgStart, from the host, opens a room for the lobby's members:
	// {"type":"lobby.start"}.
	MsgStart = "lobby.start"
)

// Types of the packets the module sends.
const (
	TypeState = "lobby.state"
	TypeLeft  = "lobby.left"
	TypeError = "lobby.error"
)

// HandoffKind is the room.Handoff kind of a lobby membership moving to
// another server.
const HandoffKind = "lobby"

// Roles of a member, as carried by a handoff.
const (
	RoleHost   = "host"
	RoleMember = "member"
)

// StatePacket is a snapshot of a lobby, sent to every connected member
// whenever it changes: never a delta, so a lost packet is corrected by
// the next one.
type StatePacket struct {
	Type    string   `json:"type"` // TypeState
	Code    string   `json:"code"`
	Host    string   `json:"host"`
	Members []string `json:"members"` // in the order they joined
	Playing bool     `json:"playing"`
	Room    string   `json:"room,omitempty"` // the running match
	Node    string   `json:"node,omitempty"` // the server the lobby lives on
}

// LeftPacket tells a player it is no longer in the lobby.
type LeftPacket struct {
	Type string `json:"type"` // TypeLeft
	Code string `json:"code"`
}

// ErrorPacket tells a player why a lobby message was refused; the
// connection stays open.
type ErrorPacket struct {
	Type  string `json:"type"` // TypeError
	Error string `json:"error"`
}

// Match is the room.Info.Data of a room a lobby starts.
type Match struct {
	Code    string
	Host    string
	Members []string
}

// handoff is the data of a lobby membership handed to another server,
// carried as a room.Handoff of HandoffKind.
type handoff struct {
	Code string `json:"code,omitempty"`
	Role string `json:"role"`
	// Create asks the target to create a new lobby with this player as
	// host (a create sent away from a draining server).
	Create bool `json:"create,omitempty"`
	// Host and Members move the whole lobby (a drain): the first member
	// to arrive re-creates it on the target under the same code.
	Host    string   `json:"host,omitempty"`
	Members []string `json:"members,omitempty"`
	From    string   `json:"from,omitempty"`
}
