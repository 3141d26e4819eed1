package federation

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// Home is the register of regional nodes and the doors they use: join,
// announce, self-test and room reports, the public regions list, and the
// admin API. It keeps nothing of its own between requests: everything is
// in the backplane's records, so any number of Home values on one Redis
// serve the same register.
//
// A Home is safe for concurrent use. It starts no goroutine and needs no
// Close; the caller owns the backplane.
type Home struct {
	cfg       HomeConfig
	bp        backplane.Backplane
	log       *slog.Logger
	limiter   *limiter
	adminHash string
	handler   http.Handler

	adminMu sync.Mutex     // serialises admin read-modify-writes
	roomMu  [64]sync.Mutex // serialises reports of one room, by hash
	cacheMu sync.Mutex     // guards the regions cache
	cache   *RegionList    // nil: nothing cached
	cacheAt time.Time      // when cache was computed
}

// NewHome returns a Home over bp, which must be durable in production (the
// Redis backplane); the memory backplane serves development and tests.
// It starts nothing.
func NewHome(cfg HomeConfig, bp backplane.Backplane, logger *slog.Logger) (*Home, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if bp == nil {
		return nil, fmt.Errorf("%w: backplane is nil", ErrInvalidConfig)
	}
	log := componentLogger(logger)
	h := &Home{cfg: cfg, bp: bp, log: log, limiter: newLimiter(bp, cfg.Now, log)}
	if cfg.AdminToken != "" {
		sum := sha256.Sum256([]byte(cfg.AdminToken))
		h.adminHash = hex.EncodeToString(sum[:])
	}
	h.handler = h.routes()
	return h, nil
}

func (h *Home) now() time.Time { return h.cfg.Now() }

// invalidate drops the cached regions list after a change made here.
func (h *Home) invalidate() {
	h.cacheMu.Lock()
	h.cache = nil
	h.cacheMu.Unlock()
}

// CreateNode registers a node, not yet approved, and returns it with its
// node key. The key is shown only here: home keeps its hash. Give it to the
// node's operator; each of the node's servers uses it once to join.
func (h *Home) CreateNode(ctx context.Context, spec NodeSpec) (NodeInfo, string, error) {
	spec, err := spec.validate()
	if err != nil {
		return NodeInfo{}, "", err
	}
	h.adminMu.Lock()
	defer h.adminMu.Unlock()
	var existing nodeRecord
	found, err := h.get(ctx, collNodes, spec.ID, &existing)
	if err != nil {
		return NodeInfo{}, "", err
	}
	if found {
		return NodeInfo{}, "", fmt.Errorf("node %q: %w", spec.ID, ErrExists)
	}
	key := newKey(kindNode)
	hash := keyHash(key)
	rec := nodeRecord{
		ID: spec.ID, Name: spec.Name, Country: spec.Country, Region: spec.Region,
		KeyHash: hash, CreatedAt: h.now(),
	}
	// The key record is written first: a node record never exists without
	// a way in, and a failure in between leaves only an orphan hash that
	// authenticates nothing.
	if err := h.put(ctx, collKeys, hash, keyRecord{Hash: hash, Kind: kindNode, NodeID: spec.ID}); err != nil {
		return NodeInfo{}, "", err
	}
	if err := h.put(ctx, collNodes, spec.ID, rec); err != nil {
		return NodeInfo{}, "", err
	}
	h.log.Info("federation: node created", "node_id", rec.ID, "country", rec.Country)
	return nodeInfo(rec), key, nil
}

// Approve puts a node in rotation whenever one of its servers is fresh.
// Approving an approved node does nothing; a revoked node cannot be
// approved again (ErrRevoked): create a new one.
func (h *Home) Approve(ctx context.Context, nodeID string) error {
	h.adminMu.Lock()
	defer h.adminMu.Unlock()
	n, err := h.node(ctx, nodeID)
	if err != nil {
		return err
	}
	if n.Revoked {
		return fmt.Errorf("approve node %q: %w", nodeID, ErrRevoked)
	}
	if n.Approved {
		return nil
	}
	n.Approved, n.ApprovedAt = true, h.now()
	if err := h.put(ctx, collNodes, n.ID, n); err != nil {
		return err
	}
	h.invalidate()
	h.log.Info("federation: node approved", "node_id", n.ID)
	return nil
}

// RevokeNode takes a node out of rotation for good: its node key and every
// server key it enrolled are refused from now on, and its room reports are
// forgotten. Revoking a revoked node does nothing.
func (h *Home) RevokeNode(ctx context.Context, nodeID string) error {
	h.adminMu.Lock()
	defer h.adminMu.Unlock()
	n, err := h.node(ctx, nodeID)
	if err != nil {
		return err
	}
	now := h.now()
	if !n.Revoked {
		n.Revoked, n.Approved, n.RevokedAt = true, false, now
		if err := h.put(ctx, collNodes, n.ID, n); err != nil {
			return err
		}
		h.invalidate()
		h.log.Info("federation: node revoked", "node_id", n.ID)
	}
	servers, err := all[serverRecord](ctx, h, collServers)
	if err != nil {
		return err
	}
	for _, sv := range servers {
		if sv.NodeID == n.ID {
			if err := h.revokeServer(ctx, sv, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// RevokeServer refuses one server's key from now on and forgets its
// presence and room reports. The node's other servers keep working.
// Revoking a revoked server does nothing more.
func (h *Home) RevokeServer(ctx context.Context, serverID string) error {
	h.adminMu.Lock()
	defer h.adminMu.Unlock()
	var sv serverRecord
	found, err := h.get(ctx, collServers, serverID, &sv)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("server %q: %w", serverID, ErrNotFound)
	}
	return h.revokeServer(ctx, sv, h.now())
}

func (h *Home) revokeServer(ctx context.Context, sv serverRecord, now time.Time) error {
	if !sv.Revoked {
		sv.Revoked, sv.RevokedAt = true, now
		if err := h.put(ctx, collServers, sv.ID, sv); err != nil {
			return err
		}
		h.invalidate()
		h.log.Info("federation: server revoked", "node_id", sv.NodeID, "server_id", sv.ID)
	}
	if err := h.del(ctx, collPresence, sv.ID); err != nil {
		return err
	}
	rooms, err := all[RoomSnapshot](ctx, h, collRooms)
	if err != nil {
		return err
	}
	for id, r := range rooms {
		if r.ServerID == sv.ID {
			if err := h.del(ctx, collRooms, id); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *Home) node(ctx context.Context, id string) (nodeRecord, error) {
	var n nodeRecord
	found, err := h.get(ctx, collNodes, id, &n)
	if err != nil {
		return n, err
	}
	if !found {
		return n, fmt.Errorf("node %q: %w", id, ErrNotFound)
	}
	return n, nil
}

// Nodes returns every node in the register, revoked ones included, with
// their servers, sorted by id.
func (h *Home) Nodes(ctx context.Context) ([]NodeInfo, error) {
	s, err := h.load(ctx, false)
	if err != nil {
		return nil, err
	}
	now := h.now()
	out := make([]NodeInfo, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, h.describe(s, n, now))
	}
	slices.SortFunc(out, func(a, b NodeInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// Node returns one node with its servers, or ErrNotFound.
func (h *Home) Node(ctx context.Context, id string) (NodeInfo, error) {
	s, err := h.load(ctx, false)
	if err != nil {
		return NodeInfo{}, err
	}
	n, ok := s.nodes[id]
	if !ok {
		return NodeInfo{}, fmt.Errorf("node %q: %w", id, ErrNotFound)
	}
	return h.describe(s, n, h.now()), nil
}

func nodeInfo(n nodeRecord) NodeInfo {
	return NodeInfo{
		ID: n.ID, Name: n.Name, Country: n.Country, Region: n.Region,
		Approved: n.Approved, Revoked: n.Revoked,
		CreatedAt: n.CreatedAt, ApprovedAt: n.ApprovedAt, RevokedAt: n.RevokedAt,
		Servers: []ServerInfo{},
	}
}

func (h *Home) describe(s snapshot, n nodeRecord, now time.Time) NodeInfo {
	info := nodeInfo(n)
	info.InRotation = s.inRotation(h, n, now)
	for id, sv := range s.servers {
		if sv.NodeID != n.ID {
			continue
		}
		si := ServerInfo{
			ID: id, NodeID: sv.NodeID, Name: sv.Name, Revoked: sv.Revoked,
			Fresh: s.freshServer(h, id, now), JoinedAt: sv.JoinedAt, RevokedAt: sv.RevokedAt,
		}
		if p, ok := s.presence[id]; ok {
			si.LastSeen, si.Services, si.Hardware = p.LastSeen, p.Services, p.Hardware
		}
		if st, ok := s.selftests[id]; ok {
			si.SelfTestDue, si.SelfTest = st.Due, st.Last
		}
		info.Servers = append(info.Servers, si)
	}
	slices.SortFunc(info.Servers, func(a, b ServerInfo) int { return cmp.Compare(a.ID, b.ID) })
	return info
}

// Room returns the latest report home holds for a room, or ErrNotFound.
func (h *Home) Room(ctx context.Context, roomID string) (RoomSnapshot, error) {
	var r RoomSnapshot
	found, err := h.get(ctx, collRooms, roomID, &r)
	if err != nil {
		return r, err
	}
	if !found || r.Closed {
		return RoomSnapshot{}, fmt.Errorf("room %q: %w", roomID, ErrNotFound)
	}
	return r, nil
}

// Regions returns the nodes in rotation, as GET /api/v1/regions serves
// them (without the cache). It also forgets room reports that can no
// longer be true (see the package documentation).
func (h *Home) Regions(ctx context.Context) (RegionList, error) {
	s, err := h.load(ctx, true)
	if err != nil {
		return RegionList{}, err
	}
	now := h.now()
	h.sweepRooms(ctx, s, now)
	list := RegionList{Home: maps.Clone(h.cfg.Services), Regions: []Region{}}
	byNode := make(map[string]*Region)
	for _, n := range s.nodes {
		if !s.inRotation(h, n, now) {
			continue
		}
		list.Regions = append(list.Regions, Region{
			Node: n.ID, Name: n.Name, Country: n.Country, Region: n.Region,
			Services: map[string][]string{},
		})
	}
	for i := range list.Regions {
		byNode[list.Regions[i].Node] = &list.Regions[i]
	}
	for id, sv := range s.servers {
		r := byNode[sv.NodeID]
		if r == nil || !s.freshServer(h, id, now) {
			continue
		}
		r.Servers++
		for name, addr := range s.presence[id].Services {
			if !slices.Contains(r.Services[name], addr) {
				r.Services[name] = append(r.Services[name], addr)
			}
		}
	}
	for _, room := range s.rooms {
		if r := byNode[room.NodeID]; r != nil && !room.Closed {
			r.Rooms++
			r.Players += len(room.Members)
		}
	}
	for i := range list.Regions {
		for _, addrs := range list.Regions[i].Services {
			slices.Sort(addrs)
		}
	}
	slices.SortFunc(list.Regions, func(a, b Region) int {
		return cmp.Or(cmp.Compare(a.Country, b.Country), cmp.Compare(a.Node, b.Node))
	})
	return list, nil
}

// roomExpiry is how long the rooms of a server that stopped announcing are
// kept: long past rotation (they may still be played), short of forever.
func (h *Home) roomExpiry() time.Duration { return 10 * h.cfg.SilentAfter }

// sweepRooms forgets close markers older than SilentAfter, and rooms whose
// server is revoked, unknown, or silent for longer than roomExpiry. It is
// housekeeping: errors are logged, never returned.
func (h *Home) sweepRooms(ctx context.Context, s snapshot, now time.Time) {
	for id, r := range s.rooms {
		sv, known := s.servers[r.ServerID]
		p, seen := s.presence[r.ServerID]
		stale := false
		switch {
		case r.Closed:
			stale = now.Sub(r.UpdatedAt) >= h.cfg.SilentAfter
		case !known || sv.Revoked:
			stale = true
		case seen:
			stale = now.Sub(p.LastSeen) >= h.roomExpiry()
		default:
			stale = now.Sub(r.UpdatedAt) >= h.roomExpiry()
		}
		if !stale {
			continue
		}
		if err := h.del(ctx, collRooms, id); err != nil {
			h.log.Warn("federation: sweeping room reports", "room_id", id, "err", err)
			return
		}
		delete(s.rooms, id)
	}
}

// regions returns the cached list or computes it.
func (h *Home) regions(ctx context.Context) (RegionList, error) {
	now := h.now()
	if h.cfg.RegionsCache > 0 {
		h.cacheMu.Lock()
		c, at := h.cache, h.cacheAt
		h.cacheMu.Unlock()
		if c != nil && now.Sub(at) < h.cfg.RegionsCache && !now.Before(at) {
			return *c, nil
		}
	}
	list, err := h.Regions(ctx)
	if err != nil {
		return list, err
	}
	if h.cfg.RegionsCache > 0 {
		h.cacheMu.Lock()
		h.cache, h.cacheAt = &list, now
		h.cacheMu.Unlock()
	}
	return list, nil
}

// principal is who a request's key belongs to.
type principal struct {
	kind   keyKind
	node   nodeRecord
	server serverRecord // for kindServer
}

// authenticate finds the owner of key: ErrUnauthorized for a malformed or
// unknown key, ErrRevoked for a revoked node or server.
func (h *Home) authenticate(ctx context.Context, key string) (principal, error) {
	kind, ok := keyKindOf(key)
	if !ok {
		return principal{}, ErrUnauthorized
	}
	hash := keyHash(key)
	var kr keyRecord
	found, err := h.get(ctx, collKeys, hash, &kr)
	if err != nil {
		return principal{}, err
	}
	// The lookup is by hash, so its timing tells nothing about the key;
	// the comparison is constant-time all the same.
	if !found || !hashesEqual(kr.Hash, hash) || kr.Kind != kind {
		return principal{}, ErrUnauthorized
	}
	p := principal{kind: kind}
	if p.node, err = h.node(ctx, kr.NodeID); err != nil {
		if errorsIsNotFound(err) {
			return principal{}, ErrUnauthorized
		}
		return principal{}, err
	}
	if p.node.Revoked {
		return principal{}, fmt.Errorf("node %q: %w", p.node.ID, ErrRevoked)
	}
	if kind == kindServer {
		found, err := h.get(ctx, collServers, kr.ServerID, &p.server)
		if err != nil {
			return principal{}, err
		}
		if !found || p.server.NodeID != p.node.ID || !hashesEqual(p.server.KeyHash, hash) {
			return principal{}, ErrUnauthorized
		}
		if p.server.Revoked {
			return principal{}, fmt.Errorf("server %q: %w", p.server.ID, ErrRevoked)
		}
	}
	return p, nil
}

// join enrols a new server of p's node and returns its key.
func (h *Home) join(ctx context.Context, p principal, req joinRequest) (joinResponse, error) {
	h.adminMu.Lock()
	defer h.adminMu.Unlock()
	servers, err := all[serverRecord](ctx, h, collServers)
	if err != nil {
		return joinResponse{}, err
	}
	count := 0
	for _, sv := range servers {
		if sv.NodeID == p.node.ID {
			count++
		}
	}
	if count >= h.cfg.MaxServersPerNode {
		return joinResponse{}, fmt.Errorf("node %q has %d: %w", p.node.ID, count, ErrTooManyServers)
	}
	now := h.now()
	id := newServerID(p.node.ID)
	key := newKey(kindServer)
	hash := keyHash(key)
	name := req.Name
	if name == "" {
		name = cmp.Or(req.Hardware.Hostname, id)
	}
	if err := h.put(ctx, collKeys, hash, keyRecord{Hash: hash, Kind: kindServer, NodeID: p.node.ID, ServerID: id}); err != nil {
		return joinResponse{}, err
	}
	sv := serverRecord{ID: id, NodeID: p.node.ID, Name: name, KeyHash: hash, JoinedAt: now}
	if err := h.put(ctx, collServers, id, sv); err != nil {
		return joinResponse{}, err
	}
	// A new server's first self-test is due at once.
	if err := h.put(ctx, collSelfTests, id, selfTestRecord{NodeID: p.node.ID, Due: now}); err != nil {
		return joinResponse{}, err
	}
	h.log.Info("federation: server joined", "node_id", p.node.ID, "server_id", id, "name", name)
	return joinResponse{
		NodeID: p.node.ID, ServerID: id, ServerKey: key,
		AnnounceEverySeconds: h.cfg.AnnounceEvery.Seconds(),
	}, nil
}

// newServerID returns "<node>-<8 hex>", cut to fit an id.
func newServerID(node string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	if len(node) > 54 {
		node = node[:54]
	}
	return node + "-" + hex.EncodeToString(b[:])
}

// announce records what a server runs and that it is alive.
func (h *Home) announce(ctx context.Context, p principal, req announceRequest) (Announcement, error) {
	if req.NodeID != "" && req.NodeID != p.node.ID {
		return Announcement{}, fmt.Errorf("announce names node %q: %w", req.NodeID, ErrWrongNode)
	}
	now := h.now()
	id := p.server.ID
	var prev presenceRecord
	had, err := h.get(ctx, collPresence, id, &prev)
	if err != nil {
		return Announcement{}, err
	}
	pres := presenceRecord{NodeID: p.node.ID, LastSeen: now, Services: req.Services, Hardware: req.Hardware, Epoch: req.Epoch}
	if err := h.put(ctx, collPresence, id, pres); err != nil {
		return Announcement{}, err
	}
	if req.Epoch != 0 && (!had || prev.Epoch != req.Epoch) {
		if err := h.pruneEpoch(ctx, id, req.Epoch); err != nil {
			return Announcement{}, err
		}
	}
	st, err := h.selfTest(ctx, p, now)
	if err != nil {
		return Announcement{}, err
	}
	if !had {
		h.log.Info("federation: server announced", "node_id", p.node.ID, "server_id", id)
	}
	return Announcement{
		NodeID: p.node.ID, ServerID: id, Approved: p.node.Approved,
		Fresh:                !h.selfTestOverdue(st, now),
		AnnounceEverySeconds: h.cfg.AnnounceEvery.Seconds(),
		SelfTest:             SelfTestSchedule{DueInSeconds: st.Due.Sub(now).Seconds(), Bytes: h.cfg.SelfTestBytes},
	}, nil
}

// selfTest returns p's self-test record, creating one due now if missing.
func (h *Home) selfTest(ctx context.Context, p principal, now time.Time) (selfTestRecord, error) {
	var st selfTestRecord
	found, err := h.get(ctx, collSelfTests, p.server.ID, &st)
	if err != nil || found {
		return st, err
	}
	st = selfTestRecord{NodeID: p.node.ID, Due: now}
	return st, h.put(ctx, collSelfTests, p.server.ID, st)
}

// pruneEpoch forgets the server's room reports from an earlier run of its
// agent: those rooms ended with that process.
func (h *Home) pruneEpoch(ctx context.Context, serverID string, epoch uint64) error {
	rooms, err := all[RoomSnapshot](ctx, h, collRooms)
	if err != nil {
		return err
	}
	for id, r := range rooms {
		if r.ServerID == serverID && r.Seq < epoch {
			if err := h.del(ctx, collRooms, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordSelfTest records an upload of n bytes that took elapsed.
func (h *Home) recordSelfTest(ctx context.Context, p principal, n int64, elapsed time.Duration) (selfTestResponse, error) {
	now := h.now()
	elapsed = max(elapsed, time.Microsecond)
	res := SelfTestResult{At: now, Bytes: n, BytesPerSecond: float64(n) / elapsed.Seconds()}
	res.Passed = n == h.cfg.SelfTestBytes && res.BytesPerSecond >= h.cfg.MinBandwidth
	st, err := h.selfTest(ctx, p, now)
	if err != nil {
		return selfTestResponse{}, err
	}
	st.Last = &res
	if res.Passed {
		st.Due = now.Add(h.cfg.SelfTestEvery)
	}
	if err := h.put(ctx, collSelfTests, p.server.ID, st); err != nil {
		return selfTestResponse{}, err
	}
	h.log.Info("federation: self-test", "node_id", p.node.ID, "server_id", p.server.ID,
		"bytes", n, "bytes_per_second", int64(res.BytesPerSecond), "passed", res.Passed)
	return selfTestResponse{SelfTestResult: res, NextDueInSeconds: st.Due.Sub(now).Seconds()}, nil
}

// reportRoom stores a room snapshot unless home holds a newer one. A room
// belongs to the server that reported it first.
func (h *Home) reportRoom(ctx context.Context, p principal, req roomRequest) (bool, error) {
	if req.NodeID != "" && req.NodeID != p.node.ID {
		return false, fmt.Errorf("room report names node %q: %w", req.NodeID, ErrWrongNode)
	}
	f := fnv.New32a()
	f.Write([]byte(req.RoomID))
	mu := &h.roomMu[f.Sum32()%uint32(len(h.roomMu))]
	mu.Lock()
	defer mu.Unlock()
	var cur RoomSnapshot
	found, err := h.get(ctx, collRooms, req.RoomID, &cur)
	if err != nil {
		return false, err
	}
	if found && cur.ServerID != p.server.ID {
		return false, fmt.Errorf("room %q: %w", req.RoomID, ErrRoomOwned)
	}
	if found && cur.Seq >= req.Seq {
		return false, nil
	}
	snap := RoomSnapshot{
		RoomReport: req.RoomReport, NodeID: p.node.ID, ServerID: p.server.ID,
		Seq: req.Seq, UpdatedAt: h.now(),
	}
	if snap.Members == nil {
		snap.Members = []string{}
	}
	// A closed room is kept as a marker for a while, so that a late report
	// sent before the close cannot bring it back.
	if err := h.put(ctx, collRooms, req.RoomID, snap); err != nil {
		return false, err
	}
	return true, nil
}
