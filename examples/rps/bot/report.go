package bot

import (
	"maps"
	"slices"
)

// Report is what happened to a bot.
type Report struct {
	// Player is the bot's player id.
	Player string
	// Welcomes are the welcomes of its connections, in order.
	Welcomes []Welcome
	// Lobby is the last lobby state it got.
	Lobby Lobby
	// Rooms are the rooms it was seated in, in order.
	Rooms []Room
	// State is the last state of its match.
	State State
	// Throws are the throws it sent.
	Throws int
	// Errors are the lobby.error and queue.error messages it got, as
	// "type: error".
	Errors []string

	thrownRound int // the round of its last throw
}

// Welcome is the server's welcome.
type Welcome struct {
	Node string `json:"node"`
	Room string `json:"room"`
}

// Lobby is a lobby.state packet.
type Lobby struct {
	Code    string   `json:"code"`
	Host    string   `json:"host"`
	Members []string `json:"members"`
}

// Room is a room the bot was seated in.
type Room struct {
	ID    string
	Kind  string
	Ended bool
	End   string // the room_end's reason
}

// State is the rps packet.
type State struct {
	Round   int               `json:"round"`
	TurnMS  int64             `json:"turn_ms"`
	Players []PlayerState     `json:"players"`
	Last    map[string]string `json:"last"`
	Winner  string            `json:"winner"`
	Over    bool              `json:"over"`
}

// PlayerState is a player in a State.
type PlayerState struct {
	ID     string `json:"id"`
	Wins   int    `json:"wins"`
	Thrown bool   `json:"thrown"`
	Away   bool   `json:"away"`
}

// Me returns the bot's own entry in s.
func (s State) Me(id string) (PlayerState, bool) {
	for _, p := range s.Players {
		if p.ID == id {
			return p, true
		}
	}
	return PlayerState{}, false
}

// Room returns the bot's last room.
func (r Report) Room() (Room, bool) {
	if len(r.Rooms) == 0 {
		return Room{}, false
	}
	return r.Rooms[len(r.Rooms)-1], true
}

// Ended counts the rooms that ended.
func (r Report) Ended() int {
	n := 0
	for _, rm := range r.Rooms {
		if rm.Ended {
			n++
		}
	}
	return n
}

func (r Report) clone() Report {
	r.Welcomes = slices.Clone(r.Welcomes)
	r.Rooms = slices.Clone(r.Rooms)
	r.Errors = slices.Clone(r.Errors)
	r.Lobby.Members = slices.Clone(r.Lobby.Members)
	r.State.Players = slices.Clone(r.State.Players)
	r.State.Last = maps.Clone(r.State.Last)
	return r
}
