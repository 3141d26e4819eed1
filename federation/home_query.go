package federation

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

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
// (revoked, or silent for ReapAfter): a room ends with its server. A
// server silent for SilentAfter only is out of rotation; its rooms go on.
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

// serveRegions serves the public regions list, cached for RegionsCache.
func (h *Home) serveRegions(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	list, err := h.regions(ctx)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=5")
	writeJSON(w, http.StatusOK, list)
}
