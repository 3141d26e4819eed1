package federation

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

	swapMu  sync.Mutex  // serialises commits on a backplane without RecordSwapper
	cacheMu sync.Mutex  // guards the regions cache and sweptAt
	cache   *RegionList // nil: nothing cached
	cacheAt time.Time   // when cache was computed
	sweptAt time.Time   // when this Home last swept every room report
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
	if _, ok := bp.(backplane.RecordSwapper); !ok {
		log.Warn("federation: the backplane has no compare-and-set (backplane.RecordSwapper): run one Home on this register only")
	}
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
	key := newKey(kindNode)
	hash := keyHash(key)
	rec := nodeRecord{
		ID: spec.ID, Name: spec.Name, Country: spec.Country, Region: spec.Region,
		KeyHash: hash, CreatedAt: h.now(),
	}
	// The node and its key record are written together, and only if the
	// id is free.
	done, err := h.commit(ctx,
		set(collKeys, hash, nil, keyRecord{Hash: hash, Kind: kindNode, NodeID: spec.ID}),
		set(collNodes, spec.ID, nil, rec))
	if err != nil {
		return NodeInfo{}, "", err
	}
	if !done {
		return NodeInfo{}, "", fmt.Errorf("node %q: %w", spec.ID, ErrExists)
	}
	h.log.Info("federation: node created", "node_id", rec.ID, "country", rec.Country)
	return nodeInfo(rec), key, nil
}

// Approve puts a node in rotation whenever one of its servers is fresh.
// Approving an approved node does nothing; a revoked node cannot be
// approved again (ErrRevoked): create a new one.
func (h *Home) Approve(ctx context.Context, nodeID string) error {
	approved := false
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		n, raw, err := h.nodeRaw(ctx, nodeID)
		if err != nil {
			return nil, err
		}
		if n.Revoked {
			return nil, fmt.Errorf("approve node %q: %w", nodeID, ErrRevoked)
		}
		if n.Approved {
			return nil, nil
		}
		n.Approved, n.ApprovedAt = true, h.now()
		approved = true
		return []backplane.RecordSwap{set(collNodes, n.ID, raw, n)}, nil
	})
	if err != nil {
		return err
	}
	if approved {
		h.invalidate()
		h.log.Info("federation: node approved", "node_id", nodeID)
	}
	return nil
}

// RevokeNode takes a node out of rotation for good: its node key and every
// server key it enrolled are refused from now on, and its room reports are
// forgotten. Revoking a revoked node does nothing.
func (h *Home) RevokeNode(ctx context.Context, nodeID string) error {
	now := h.now()
	revoked := false
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		n, raw, err := h.nodeRaw(ctx, nodeID)
		if err != nil || n.Revoked {
			return nil, err
		}
		n.Revoked, n.Approved, n.RevokedAt = true, false, now
		revoked = true
		return []backplane.RecordSwap{set(collNodes, n.ID, raw, n)}, nil
	})
	if err != nil {
		return err
	}
	if revoked {
		h.invalidate()
		h.log.Info("federation: node revoked", "node_id", nodeID)
	}
	// A server joining meanwhile checked the node record in its swap, so
	// every server of the node is in this list.
	servers, err := all[serverRecord](ctx, h, collServers)
	if err != nil {
		return err
	}
	for _, sv := range servers {
		if sv.NodeID == nodeID {
			if err := h.revokeServer(ctx, sv.ID, now); err != nil {
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
	return h.revokeServer(ctx, serverID, h.now())
}

func (h *Home) revokeServer(ctx context.Context, serverID string, now time.Time) error {
	var revoked serverRecord
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		var sv serverRecord
		raw, err := h.read(ctx, collServers, serverID, &sv)
		if err != nil {
			return nil, err
		}
		if raw == nil {
			return nil, fmt.Errorf("server %q: %w", serverID, ErrNotFound)
		}
		if sv.Revoked {
			return nil, nil
		}
		sv.Revoked, sv.RevokedAt = true, now
		revoked = sv
		return []backplane.RecordSwap{set(collServers, sv.ID, raw, sv)}, nil
	})
	if err != nil {
		return err
	}
	if revoked.Revoked {
		h.invalidate()
		h.log.Info("federation: server revoked", "node_id", revoked.NodeID, "server_id", revoked.ID)
	}
	// Every write of the server's presence and rooms checks the server
	// record, so none lands after this point: what is there now is all
	// there will be.
	if err := h.bp.DeleteRecord(ctx, collPresence, serverID); err != nil {
		return fmt.Errorf("%w: delete %s: %w", ErrUnavailable, collPresence, err)
	}
	return h.endRooms(ctx, func(r RoomSnapshot) bool { return r.ServerID == serverID })
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

// Nodes returns every node in the register, revoked ones included, with
// their servers, sorted by id.
func (h *Home) Nodes(ctx context.Context) ([]NodeInfo, error) {
	s, err := h.load(ctx)
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
	s, err := h.load(ctx)
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
		if c, ok := s.counts[id]; ok && s.liveServer(h, id, now) {
			si.Rooms, si.Players = c.Rooms, c.Players
		}
		info.Servers = append(info.Servers, si)
	}
	slices.SortFunc(info.Servers, func(a, b ServerInfo) int { return cmp.Compare(a.ID, b.ID) })
	return info
}

// Room returns the latest report home holds for a room, or ErrNotFound
// when it has none, the room is closed, or the room's server is dead
// (revoked, or silent for SilentAfter): a room ends with its server.
func (h *Home) Room(ctx context.Context, roomID string) (RoomSnapshot, error) {
	var r RoomSnapshot
	raw, err := h.read(ctx, collRooms, roomID, &r)
	if err != nil {
		return r, err
	}
	if raw == nil || r.Closed {
		return RoomSnapshot{}, fmt.Errorf("room %q: %w", roomID, ErrNotFound)
	}
	var sv serverRecord
	var p presenceRecord
	rawSv, err := h.read(ctx, collServers, r.ServerID, &sv)
	if err != nil {
		return RoomSnapshot{}, err
	}
	rawP, err := h.read(ctx, collPresence, r.ServerID, &p)
	if err != nil {
		return RoomSnapshot{}, err
	}
	if rawSv == nil || !h.live(sv, p, rawP != nil, h.now()) {
		return RoomSnapshot{}, fmt.Errorf("room %q (its server is gone): %w", roomID, ErrNotFound)
	}
	return r, nil
}

// Regions returns the nodes in rotation, as GET /api/v1/regions serves
// them (without the cache). It reads one record per node and per server,
// never the room reports: rooms and players are counted as reports
// arrive. It also ends the rooms of servers that died (see the package
// documentation), and at most once per SilentAfter sweeps old close
// markers.
func (h *Home) Regions(ctx context.Context) (RegionList, error) {
	s, err := h.load(ctx)
	if err != nil {
		return RegionList{}, err
	}
	now := h.now()
	h.sweep(ctx, s, now)
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
		if r == nil {
			continue
		}
		if c, ok := s.counts[id]; ok && s.liveServer(h, id, now) {
			r.Rooms += c.Rooms
			r.Players += c.Players
		}
		if !s.freshServer(h, id, now) {
			continue
		}
		r.Servers++
		for name, addr := range s.presence[id].Services {
			if !slices.Contains(r.Services[name], addr) {
				r.Services[name] = append(r.Services[name], addr)
			}
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

// sweep is housekeeping on the room reports; errors are logged, never
// returned. The rooms of a server that is dead (revoked, unknown, or
// silent for SilentAfter) and still counts rooms end at once; and once per
// SilentAfter every report is read to forget close markers older than
// SilentAfter and anything else left behind.
func (h *Home) sweep(ctx context.Context, s snapshot, now time.Time) {
	dead := map[string]bool{}
	for id, c := range s.counts {
		if !s.liveServer(h, id, now) && (c.Rooms > 0 || c.Players > 0) {
			dead[id] = true
		}
	}
	h.cacheMu.Lock()
	full := h.sweptAt.IsZero() || now.Sub(h.sweptAt) >= h.cfg.SilentAfter || now.Before(h.sweptAt)
	if full {
		h.sweptAt = now
	}
	h.cacheMu.Unlock()
	if !full && len(dead) == 0 {
		return
	}
	err := h.endRooms(ctx, func(r RoomSnapshot) bool {
		if r.Closed {
			return full && now.Sub(r.UpdatedAt) >= h.cfg.SilentAfter
		}
		if dead[r.ServerID] {
			return true
		}
		return full && !s.liveServer(h, r.ServerID, now)
	})
	if err != nil {
		h.log.Warn("federation: sweeping room reports", "err", err)
		return
	}
	for id := range dead {
		if err := h.settleCounts(ctx, id); err != nil {
			h.log.Warn("federation: sweeping room reports", "server_id", id, "err", err)
		}
	}
}

// endRooms forgets every room report for which end is true, taking each
// out of its server's counts in the same compare-and-set.
func (h *Home) endRooms(ctx context.Context, end func(RoomSnapshot) bool) error {
	rooms, err := all[RoomSnapshot](ctx, h, collRooms)
	if err != nil {
		return err
	}
	for id, r := range rooms {
		if !end(r) {
			continue
		}
		err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
			var cur RoomSnapshot
			raw, err := h.read(ctx, collRooms, id, &cur)
			if err != nil || raw == nil || cur.ServerID != r.ServerID || cur.Seq != r.Seq {
				return nil, err // gone, or changed since: judged again next time
			}
			var c countRecord
			rawC, err := h.read(ctx, collCounts, cur.ServerID, &c)
			if err != nil {
				return nil, err
			}
			swaps := []backplane.RecordSwap{unset(collRooms, id, raw)}
			if !cur.Closed && rawC != nil {
				c.Rooms, c.Players = max(0, c.Rooms-1), max(0, c.Players-len(cur.Members))
				swaps = append(swaps, set(collCounts, cur.ServerID, rawC, c))
			}
			return swaps, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// settleCounts deletes a dead server's counts once its rooms are gone.
func (h *Home) settleCounts(ctx context.Context, serverID string) error {
	return h.update(ctx, func() ([]backplane.RecordSwap, error) {
		var c countRecord
		raw, err := h.read(ctx, collCounts, serverID, &c)
		if err != nil || raw == nil {
			return nil, err
		}
		if c.Rooms > 0 {
			// Rooms it reported while being swept; or counts that drifted
			// (a register written before counts were kept): start again.
			h.log.Warn("federation: a dead server's room counts reset", "server_id", serverID, "rooms", c.Rooms)
		}
		return []backplane.RecordSwap{unset(collCounts, serverID, raw)}, nil
	})
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
	raw, err := h.read(ctx, collKeys, hash, &kr)
	if err != nil {
		return principal{}, err
	}
	// The lookup is by hash, so its timing tells nothing about the key;
	// the comparison is constant-time all the same.
	if raw == nil || !hashesEqual(kr.Hash, hash) || kr.Kind != kind {
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
		raw, err := h.read(ctx, collServers, kr.ServerID, &p.server)
		if err != nil {
			return principal{}, err
		}
		if raw == nil || p.server.NodeID != p.node.ID || !hashesEqual(p.server.KeyHash, hash) {
			return principal{}, ErrUnauthorized
		}
		if p.server.Revoked {
			return principal{}, fmt.Errorf("server %q: %w", p.server.ID, ErrRevoked)
		}
	}
	return p, nil
}

// current re-reads p's node and server records for a compare-and-set: the
// raw bytes to check, and ErrRevoked when either was revoked since.
func (h *Home) current(ctx context.Context, p principal) (n nodeRecord, rawN []byte, sv serverRecord, rawS []byte, err error) {
	if n, rawN, err = h.nodeRaw(ctx, p.node.ID); err != nil {
		return
	}
	if n.Revoked {
		err = fmt.Errorf("node %q: %w", n.ID, ErrRevoked)
		return
	}
	if p.kind != kindServer {
		return
	}
	if rawS, err = h.read(ctx, collServers, p.server.ID, &sv); err != nil {
		return
	}
	if rawS == nil {
		err = ErrUnauthorized
	} else if sv.Revoked {
		err = fmt.Errorf("server %q: %w", sv.ID, ErrRevoked)
	}
	return
}

// join enrols a new server of p's node and returns its key.
func (h *Home) join(ctx context.Context, p principal, req joinRequest) (joinResponse, error) {
	now := h.now()
	id := newServerID(p.node.ID)
	key := newKey(kindServer)
	hash := keyHash(key)
	name := req.Name
	if name == "" {
		name = cmp.Or(req.Hardware.Hostname, id)
	}
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		n, rawN, _, _, err := h.current(ctx, p)
		if err != nil {
			return nil, err
		}
		count := n.Enrolled
		if count == 0 {
			// A register written before Enrolled was kept: count them.
			servers, err := all[serverRecord](ctx, h, collServers)
			if err != nil {
				return nil, err
			}
			for _, sv := range servers {
				if sv.NodeID == n.ID {
					count++
				}
			}
		}
		if count >= h.cfg.MaxServersPerNode {
			return nil, fmt.Errorf("node %q has %d (max-servers-per-node): %w", n.ID, count, ErrTooManyServers)
		}
		n.Enrolled = count + 1
		return []backplane.RecordSwap{
			set(collNodes, n.ID, rawN, n),
			set(collKeys, hash, nil, keyRecord{Hash: hash, Kind: kindServer, NodeID: n.ID, ServerID: id}),
			set(collServers, id, nil, serverRecord{ID: id, NodeID: n.ID, Name: name, KeyHash: hash, JoinedAt: now}),
			// A new server's first self-test is due at once.
			set(collSelfTests, id, nil, selfTestRecord{NodeID: n.ID, Due: now}),
		}, nil
	})
	if err != nil {
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
	var had, approved bool
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		n, _, _, rawS, err := h.current(ctx, p)
		if err != nil {
			return nil, err
		}
		approved = n.Approved
		prev = presenceRecord{}
		rawP, err := h.read(ctx, collPresence, id, &prev)
		if err != nil {
			return nil, err
		}
		had = rawP != nil
		pres := presenceRecord{NodeID: p.node.ID, LastSeen: now, Services: req.Services, Hardware: req.Hardware, Epoch: req.Epoch}
		return []backplane.RecordSwap{same(collServers, id, rawS), set(collPresence, id, rawP, pres)}, nil
	})
	if err != nil {
		return Announcement{}, err
	}
	// An agent that restarted (a new epoch) ended its earlier rooms.
	if req.Epoch != 0 && (!had || prev.Epoch != req.Epoch) {
		if err := h.endRooms(ctx, func(r RoomSnapshot) bool { return r.ServerID == id && r.Seq < req.Epoch }); err != nil {
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
		NodeID: p.node.ID, ServerID: id, Approved: approved,
		Fresh:                !h.selfTestOverdue(st, now),
		AnnounceEverySeconds: h.cfg.AnnounceEvery.Seconds(),
		SelfTest:             SelfTestSchedule{DueInSeconds: st.Due.Sub(now).Seconds(), Bytes: h.cfg.SelfTestBytes},
	}, nil
}

// selfTest returns p's self-test record, creating one due now if missing.
func (h *Home) selfTest(ctx context.Context, p principal, now time.Time) (selfTestRecord, error) {
	var st selfTestRecord
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		st = selfTestRecord{}
		raw, err := h.read(ctx, collSelfTests, p.server.ID, &st)
		if err != nil || raw != nil {
			return nil, err
		}
		st = selfTestRecord{NodeID: p.node.ID, Due: now}
		return []backplane.RecordSwap{set(collSelfTests, p.server.ID, nil, st)}, nil
	})
	return st, err
}

// recordSelfTest records an upload of n bytes that took elapsed.
func (h *Home) recordSelfTest(ctx context.Context, p principal, n int64, elapsed time.Duration) (selfTestResponse, error) {
	now := h.now()
	elapsed = max(elapsed, time.Microsecond)
	res := SelfTestResult{At: now, Bytes: n, BytesPerSecond: float64(n) / elapsed.Seconds()}
	res.Passed = n == h.cfg.SelfTestBytes && res.BytesPerSecond >= h.cfg.MinBandwidth
	var st selfTestRecord
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		_, _, _, rawS, err := h.current(ctx, p)
		if err != nil {
			return nil, err
		}
		st = selfTestRecord{NodeID: p.node.ID, Due: now}
		raw, err := h.read(ctx, collSelfTests, p.server.ID, &st)
		if err != nil {
			return nil, err
		}
		st.Last = &res
		if res.Passed {
			st.Due = now.Add(h.cfg.SelfTestEvery)
		}
		return []backplane.RecordSwap{same(collServers, p.server.ID, rawS), set(collSelfTests, p.server.ID, raw, st)}, nil
	})
	if err != nil {
		return selfTestResponse{}, err
	}
	h.log.Info("federation: self-test", "node_id", p.node.ID, "server_id", p.server.ID,
		"bytes", n, "bytes_per_second", int64(res.BytesPerSecond), "passed", res.Passed)
	return selfTestResponse{SelfTestResult: res, NextDueInSeconds: st.Due.Sub(now).Seconds()}, nil
}

// reportRoom stores a room snapshot unless home holds a newer one, and
// keeps the server's room and player counts with it. Only a server of an
// approved node that has announced within SilentAfter may report, up to
// MaxRoomsPerServer open rooms. A room belongs to the server that
// reported it first.
func (h *Home) reportRoom(ctx context.Context, p principal, req roomRequest) (bool, error) {
	if req.NodeID != "" && req.NodeID != p.node.ID {
		return false, fmt.Errorf("room report names node %q: %w", req.NodeID, ErrWrongNode)
	}
	id := p.server.ID
	members := req.Members
	if members == nil {
		members = []string{}
	}
	stored := false
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		stored = false
		now := h.now()
		n, rawN, sv, rawS, err := h.current(ctx, p)
		if err != nil {
			return nil, err
		}
		if !n.Approved {
			return nil, fmt.Errorf("node %q: %w", n.ID, ErrNotApproved)
		}
		var pres presenceRecord
		rawP, err := h.read(ctx, collPresence, id, &pres)
		if err != nil {
			return nil, err
		}
		if !h.live(sv, pres, rawP != nil, now) {
			return nil, fmt.Errorf("server %q: %w", id, ErrNotAnnounced)
		}
		var cur RoomSnapshot
		rawR, err := h.read(ctx, collRooms, req.RoomID, &cur)
		if err != nil {
			return nil, err
		}
		if rawR != nil && cur.ServerID != id {
			return nil, fmt.Errorf("room %q: %w", req.RoomID, ErrRoomOwned)
		}
		if rawR != nil && cur.Seq >= req.Seq {
			return nil, nil
		}
		c := countRecord{NodeID: n.ID}
		rawC, err := h.read(ctx, collCounts, id, &c)
		if err != nil {
			return nil, err
		}
		wasOpen := rawR != nil && !cur.Closed
		if wasOpen {
			c.Rooms--
			c.Players -= len(cur.Members)
		}
		if !req.Closed {
			if !wasOpen && c.Rooms >= h.cfg.MaxRoomsPerServer {
				return nil, fmt.Errorf("server %q has %d open rooms, the most max-rooms-per-server allows: %w", id, c.Rooms, ErrTooManyRooms)
			}
			c.Rooms++
			c.Players += len(members)
		}
		c.Rooms, c.Players = max(0, c.Rooms), max(0, c.Players)
		snap := RoomSnapshot{
			RoomReport: req.RoomReport, NodeID: n.ID, ServerID: id,
			Seq: req.Seq, UpdatedAt: now,
		}
		snap.Members = members
		stored = true
		// A closed room is kept as a marker for a while, so that a late
		// report sent before the close cannot bring it back.
		return []backplane.RecordSwap{
			same(collNodes, n.ID, rawN),
			same(collServers, id, rawS),
			set(collRooms, req.RoomID, rawR, snap),
			set(collCounts, id, rawC, c),
		}, nil
	})
	return stored, err
}
