package room

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"time"
)

// A room moves between the servers of a fleet as a snapshot: what the
// game's Migrator writes of its Sim and players, the step it is at, its
// seats, its id and Info, its properties, and what the modules keep of it
// (RoomMover). The snapshot is signed with a key derived from the
// fleet's secret (Config.Secret, muster.security.key), so that a server
// takes no room from another fleet, or from anyone without the key.

// Migrator is the optional hook pair of a Game whose rooms can move to
// another server while they run (a drain moves them rather than waiting
// for them to end). A game without it behaves as before: its rooms finish
// where they are.
//
// Snapshot runs on the room's worker, at a step boundary, with the room
// frozen: it returns the room's state as bytes (the Sim, and each seated
// player's value). Restore runs on the server the room moves to, with the
// room's Info and those bytes; it returns the Sim and the value of every
// player whose Join had run (by player id), as if Join had returned
// them. The room then resumes at the same step, with the same id; Join
// does not run again for those players. An error of either keeps the
// room where it is. Restore must refuse bytes it cannot read rather than
// panic: a panic is caught and refuses the room too.
//
// A game whose Sim holds its players' values (as pointers) rebuilds them
// from its own snapshot, as the duel example does.
type Migrator[Sim, Input, Player any] interface {
	Snapshot(r *Room[Sim, Input, Player]) ([]byte, error)
	Restore(info Info, data []byte) (Sim, map[string]Player, error)
}

// RoomMover is an optional interface of a Module that keeps state of its
// own about rooms (a lobby whose match runs there, the teams of a match it
// opened): what it keeps travels with a room that moves.
//
// MoveOut runs on the server the room leaves, before the room is frozen:
// it returns the module's data for the room (nil for none), or ok false
// to keep the room here (it then finishes where it is, as without
// migration). MoveIn runs on the server the room moves to, before the
// room resumes, with what MoveOut returned: it returns the room's
// Info.Data as the module made it (nil to leave it to another module), or
// an error to refuse the room. Both must not block. Use refuses a module
// whose MoveOut or MoveIn has another signature.
type RoomMover interface {
	MoveOut(info Info) (data []byte, ok bool)
	MoveIn(info Info, data []byte) (roomData any, err error)
}

// ErrSnapshot is wrapped by the error for a room snapshot that is refused:
// unsigned or signed with another key, for another server, expired, too
// large, or one the game or a module cannot read.
var ErrSnapshot = errors.New("room: snapshot refused")

// snapshotVersion is the version of the snapshot's format.
const snapshotVersion = 1

// snapshot is a room as it moves: everything the server it moves to needs
// to resume it.
type snapshot struct {
	V    int    `json:"v"`
	From string `json:"from"`
	To   string `json:"to"`
	// Expires is when the snapshot may no longer be taken (Unix
	// milliseconds): a snapshot sent again later is refused.
	Expires int64 `json:"expires"`

	ID      string          `json:"id"`
	Kind    string          `json:"kind,omitempty"`
	Players []string        `json:"players,omitempty"` // Info.Players
	Data    json.RawMessage `json:"data,omitempty"`    // Info.Data as JSON

	Step    uint64            `json:"step"`
	Seats   []seatSnapshot    `json:"seats"`
	Props   map[string]string `json:"props,omitempty"`
	Game    []byte            `json:"game"`
	Modules map[string][]byte `json:"modules,omitempty"` // module type → RoomMover data
}

// seatSnapshot is one seat of a snapshot.
type seatSnapshot struct {
	ID     string `json:"id"`
	Joined bool   `json:"joined,omitempty"` // the game's Join had run
	Away   bool   `json:"away,omitempty"`   // PlayerAway was told
}

// snapshotKey derives the key that signs snapshots from the fleet's
// secret, so that the secret itself signs nothing else.
func snapshotKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("muster room snapshot v1"))
	return m.Sum(nil)
}

// sealSnapshot encodes s and signs it with key: the hex HMAC-SHA256 of the
// JSON, a newline, and the JSON.
func sealSnapshot(key []byte, s *snapshot) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	m := hmac.New(sha256.New, key)
	m.Write(body)
	out := make([]byte, 0, 2*sha256.Size+1+len(body))
	out = hex.AppendEncode(out, m.Sum(nil))
	out = append(out, '\n')
	return append(out, body...), nil
}

// openSnapshot checks sealed's signature under key and decodes it: a
// room moved to server self, at now. It checks the snapshot is of the
// known version, for server self, and not expired; never panics on any
// input.
func openSnapshot(key, sealed []byte, self string, now time.Time) (*snapshot, error) {
	s, err := unsealSnapshot(key, sealed, now)
	if err != nil {
		return nil, err
	}
	if s.To != self || self == "" {
		return nil, fmt.Errorf("%w: for server %q, not this one", ErrSnapshot, s.To)
	}
	return s, nil
}

// openCheckpoint checks sealed's signature under key and decodes it: a
// checkpoint (a snapshot for no server) that server from wrote of one of
// its rooms, resumed at now. It checks the snapshot is of the known
// version, a checkpoint, of server from, and not expired; never panics on
// any input.
func openCheckpoint(key, sealed []byte, from string, now time.Time) (*snapshot, error) {
	s, err := unsealSnapshot(key, sealed, now)
	if err != nil {
		return nil, err
	}
	switch {
	case s.To != "":
		return nil, fmt.Errorf("%w: a move to server %q, not a checkpoint", ErrSnapshot, s.To)
	case s.From != from || from == "":
		return nil, fmt.Errorf("%w: a checkpoint of server %q, not of %q", ErrSnapshot, s.From, from)
	}
	return s, nil
}

// unsealSnapshot checks sealed's signature under key, decodes it, and
// checks it is of the known version, names a room and distinct seats, and
// has not expired at now.
func unsealSnapshot(key, sealed []byte, now time.Time) (*snapshot, error) {
	const sigLen = 2 * sha256.Size
	if len(sealed) < sigLen+1 || sealed[sigLen] != '\n' {
		return nil, fmt.Errorf("%w: not a signed snapshot", ErrSnapshot)
	}
	got := make([]byte, sha256.Size)
	if _, err := hex.Decode(got, sealed[:sigLen]); err != nil {
		return nil, fmt.Errorf("%w: not a signed snapshot", ErrSnapshot)
	}
	body := sealed[sigLen+1:]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return nil, fmt.Errorf("%w: signed with another key", ErrSnapshot)
	}
	var s snapshot
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	switch {
	case s.V != snapshotVersion:
		return nil, fmt.Errorf("%w: version %d, want %d", ErrSnapshot, s.V, snapshotVersion)
	case now.UnixMilli() > s.Expires:
		return nil, fmt.Errorf("%w: expired", ErrSnapshot)
	case s.ID == "":
		return nil, fmt.Errorf("%w: no room id", ErrSnapshot)
	}
	seen := make(map[string]bool, len(s.Seats))
	for _, st := range s.Seats {
		if st.ID == "" || seen[st.ID] {
			return nil, fmt.Errorf("%w: empty or repeated seat %q", ErrSnapshot, st.ID)
		}
		seen[st.ID] = true
	}
	return &s, nil
}

// snapshotGame runs the game's Snapshot for r, on r's worker; a panic is
// an error.
func (h *Host[Sim, Input, Player]) snapshotGame(r *Room[Sim, Input, Player]) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error("Snapshot panicked; the room stays", "room_id", r.info.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("snapshot panicked: %v", p)
		}
	}()
	return h.migrator.Snapshot(r)
}

// restoreGame runs the game's Restore; a panic is an error.
func (h *Host[Sim, Input, Player]) restoreGame(info Info, data []byte) (sim Sim, players map[string]Player, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: Restore panicked: %v", ErrSnapshot, p)
		}
	}()
	sim, players, err = h.migrator.Restore(info, data)
	if err != nil {
		return sim, nil, fmt.Errorf("%w: the game's Restore: %v", ErrSnapshot, err)
	}
	if err := checkSimValue(sim); err != nil {
		return sim, nil, err
	}
	return sim, players, nil
}

// checkSimValue refuses a nil Sim from Restore: every hook would meet it.
func checkSimValue[Sim any](sim Sim) error {
	v := reflect.ValueOf(&sim).Elem()
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Interface) && v.IsNil() {
		return fmt.Errorf("%w: the game's Restore returned a nil Sim", ErrSnapshot)
	}
	return nil
}

// freeze runs on r's worker at the end of a pass while a move is asked
// (mv): the game's Snapshot, and the seats as they are, are taken into
// mv.snap, and the room steps no more until the move is done or undone.
// An error of the game's leaves the room running.
func (r *Room[Sim, Input, Player]) freeze(mv *moving) {
	data, err := r.host.snapshotGame(r)
	r.mu.Lock()
	if r.mv != mv || r.ended {
		r.mu.Unlock() // undone meanwhile (the mover gave up)
		return
	}
	if err != nil {
		r.mv = nil
		r.mu.Unlock()
		mv.done(nil, err)
		return
	}
	s := r.captureLocked(data)
	mv.frozen = true
	r.mu.Unlock()
	mv.done(s, nil)
}

// captureLocked returns r's snapshot with the game's part data: its step,
// seats, id and Info, and properties. On r's worker, r.mu held.
func (r *Room[Sim, Input, Player]) captureLocked(data []byte) *snapshot {
	s := &snapshot{
		V: snapshotVersion, ID: r.info.ID, Kind: r.info.Kind, Players: r.info.Players,
		Step: r.steps, Props: maps.Clone(r.props), Game: data,
		Seats: make([]seatSnapshot, 0, len(r.seats)),
	}
	for id, st := range r.seats {
		s.Seats = append(s.Seats, seatSnapshot{ID: id, Joined: st.joined, Away: st.awayTold})
	}
	return s
}
