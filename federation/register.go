package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/muster-gg/muster/backplane"
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

// get reads record id of coll into v and reports whether it exists.
func (h *Home) get(ctx context.Context, coll, id string, v any) (bool, error) {
	data, err := h.bp.Record(ctx, coll, id)
	if errors.Is(err, backplane.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: read %s: %w", ErrUnavailable, coll, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%w: decode %s/%s: %w", ErrUnavailable, coll, id, err)
	}
	return true, nil
}

func (h *Home) put(ctx context.Context, coll, id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", coll, err)
	}
	if err := h.bp.PutRecord(ctx, coll, id, data); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrUnavailable, coll, err)
	}
	return nil
}

func (h *Home) del(ctx context.Context, coll, id string) error {
	if err := h.bp.DeleteRecord(ctx, coll, id); err != nil {
		return fmt.Errorf("%w: delete %s: %w", ErrUnavailable, coll, err)
	}
	return nil
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
	rooms     map[string]RoomSnapshot // nil unless asked for
}

func (h *Home) load(ctx context.Context, withRooms bool) (snapshot, error) {
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
	if withRooms {
		if s.rooms, err = all[RoomSnapshot](ctx, h, collRooms); err != nil {
			return s, err
		}
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
