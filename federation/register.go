package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// The register lives in backplane records, one collection per concern, so
// that writers never overwrite each other's fields: admin operations own
// nodes and servers, announces own presence, self-tests own selftests and
// room reports own rooms.
const (
	collNodes     = "federation.nodes"     // node id -> nodeRecord
	collServers   = "federation.servers"   // server id -> serverRecord
	collKeys      = "federation.keys"      // hex SHA-256 of a key -> keyRecord
	collPresence  = "federation.presence"  // server id -> presenceRecord
	collSelfTests = "federation.selftests" // server id -> selfTestRecord
	collRooms     = "federation.rooms"     // room id -> RoomSnapshot
	collCounts    = "federation.counts"    // server id -> countRecord
)

type nodeRecord struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Country    string    `json:"country"`
	Region     string    `json:"region,omitempty"`
	KeyHash    string    `json:"key_hash"`
	Approved   bool      `json:"approved"`
	Revoked    bool      `json:"revoked"`
	CreatedAt  time.Time `json:"created_at"`
	ApprovedAt time.Time `json:"approved_at,omitzero"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
	// Enrolled counts the servers the node has enrolled, revoked ones
	// included; zero in a register written before it was kept, when the
	// servers are counted instead.
	Enrolled int `json:"enrolled,omitempty"`
}

// countRecord is what a server's room reports add up to, kept as each
// report is stored (in the same compare-and-set), so that the regions list
// reads one small record per server instead of every report.
type countRecord struct {
	NodeID  string `json:"node_id"`
	Rooms   int    `json:"rooms"`
	Players int    `json:"players"`
}

type serverRecord struct {
	ID        string    `json:"id"`
	NodeID    string    `json:"node_id"`
	Name      string    `json:"name"`
	KeyHash   string    `json:"key_hash"`
	Revoked   bool      `json:"revoked"`
	JoinedAt  time.Time `json:"joined_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

type keyRecord struct {
	Hash     string  `json:"hash"`
	Kind     keyKind `json:"kind"`
	NodeID   string  `json:"node_id"`
	ServerID string  `json:"server_id,omitempty"`
}

type presenceRecord struct {
	NodeID   string            `json:"node_id"`
	LastSeen time.Time         `json:"last_seen"`
	Services map[string]string `json:"services,omitempty"`
	Hardware Hardware          `json:"hardware"`
	Epoch    uint64            `json:"epoch,omitempty"`
}

type selfTestRecord struct {
	NodeID string          `json:"node_id"`
	Due    time.Time       `json:"due"`
	Last   *SelfTestResult `json:"last,omitempty"`
}

// all reads every record of coll, skipping (and logging) any that does not
// decode.
func all[T any](ctx context.Context, h *Home, coll string) (map[string]T, error) {
	raw, err := h.bp.Records(ctx, coll)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrUnavailable, coll, err)
	}
	out := make(map[string]T, len(raw))
	for id, data := range raw {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			h.log.Warn("federation: skipping a register record that does not decode",
				"collection", coll, "id", id, "err", err)
			continue
		}
		out[id] = v
	}
	return out, nil
}

// snapshot is the whole register at one moment.
type snapshot struct {
	nodes     map[string]nodeRecord
	servers   map[string]serverRecord
	presence  map[string]presenceRecord
	selftests map[string]selfTestRecord
	counts    map[string]countRecord
}

func (h *Home) load(ctx context.Context) (snapshot, error) {
	var s snapshot
	var err error
	if s.nodes, err = all[nodeRecord](ctx, h, collNodes); err != nil {
		return s, err
	}
	if s.servers, err = all[serverRecord](ctx, h, collServers); err != nil {
		return s, err
	}
	if s.presence, err = all[presenceRecord](ctx, h, collPresence); err != nil {
		return s, err
	}
	if s.selftests, err = all[selfTestRecord](ctx, h, collSelfTests); err != nil {
		return s, err
	}
	if s.counts, err = all[countRecord](ctx, h, collCounts); err != nil {
		return s, err
	}
	return s, nil
}

// fresh is the rotation rule for one server: it counts while it is not
// revoked, less than SilentAfter has passed since its last announce, and
// its self-test has not been due for longer than SelfTestGrace.
func (h *Home) fresh(sv serverRecord, p presenceRecord, havePresence bool, st selfTestRecord, haveSelfTest bool, now time.Time) bool {
	if sv.Revoked || !havePresence || now.Sub(p.LastSeen) >= h.cfg.SilentAfter {
		return false
	}
	return !haveSelfTest || !h.selfTestOverdue(st, now)
}

// live is the rule for a server's rooms: they last while it is not revoked
// (revoking a node revokes its servers) and has announced within
// ReapAfter. A server silent for SilentAfter is out of rotation, so no new
// room is placed there, but its rooms go on; one silent for ReapAfter is
// dead, and its rooms are taken as abandoned.
func (h *Home) live(sv serverRecord, p presenceRecord, havePresence bool, now time.Time) bool {
	return !sv.Revoked && havePresence && now.Sub(p.LastSeen) < h.cfg.ReapAfter
}

func (h *Home) selfTestOverdue(st selfTestRecord, now time.Time) bool {
	return !st.Due.IsZero() && now.Sub(st.Due) > h.cfg.SelfTestGrace
}

func (s snapshot) freshServer(h *Home, id string, now time.Time) bool {
	sv, ok := s.servers[id]
	if !ok {
		return false
	}
	p, hp := s.presence[id]
	st, hs := s.selftests[id]
	return h.fresh(sv, p, hp, st, hs, now)
}

func (s snapshot) liveServer(h *Home, id string, now time.Time) bool {
	sv, ok := s.servers[id]
	p, hp := s.presence[id]
	return ok && h.live(sv, p, hp, now)
}

// inRotation: approved, not revoked, and at least one fresh server.
func (s snapshot) inRotation(h *Home, n nodeRecord, now time.Time) bool {
	if !n.Approved || n.Revoked {
		return false
	}
	for id, sv := range s.servers {
		if sv.NodeID == n.ID && s.freshServer(h, id, now) {
			return true
		}
	}
	return false
}

// nodeRaw reads a node record with its raw bytes, or ErrNotFound.
func (h *Home) nodeRaw(ctx context.Context, id string) (nodeRecord, []byte, error) {
	var n nodeRecord
	raw, err := h.read(ctx, collNodes, id, &n)
	if err != nil {
		return n, nil, err
	}
	if raw == nil {
		return n, nil, fmt.Errorf("node %q: %w", id, ErrNotFound)
	}
	return n, raw, nil
}

func (h *Home) node(ctx context.Context, id string) (nodeRecord, error) {
	n, _, err := h.nodeRaw(ctx, id)
	return n, err
}
