package federation

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/muster-gg/muster/backplane"
)

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

// reportRoom stores a room snapshot unless home holds a newer one (the
// answer says whether it did), and keeps the server's room and player
// counts with it. Only a server of an approved node that has announced
// within ReapAfter may report, up to MaxRoomsPerServer open rooms. A
// room belongs to the server that reported it first.
func (h *Home) reportRoom(ctx context.Context, p principal, req roomRequest) (roomResponse, error) {
	if req.NodeID != "" && req.NodeID != p.node.ID {
		return roomResponse{}, fmt.Errorf("room report names node %q: %w", req.NodeID, ErrWrongNode)
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
		seq := req.Seq
		if seq == 0 {
			seq = cur.Seq + 1 // a report without seq is ordered by its arrival
		}
		if rawR != nil && cur.Seq >= seq {
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
			Seq: seq, UpdatedAt: now,
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
	return roomResponse{Stored: stored}, err
}

// serveJoin, serveAnnounce and serveRoom are the JSON doors (PathJoin,
// PathAnnounce, PathRooms), behind door.
func (h *Home) serveJoin(w http.ResponseWriter, r *http.Request, p principal) {
	// The answer holds the server's key, shown once: no cache keeps it.
	w.Header().Set("Cache-Control", "no-store")
	serveDoor(h, w, r, p, h.cfg.MaxBody, "max-body", decodeJoin, h.join, http.StatusCreated)
}

func (h *Home) serveAnnounce(w http.ResponseWriter, r *http.Request, p principal) {
	serveDoor(h, w, r, p, h.cfg.MaxBody, "max-body", decodeAnnounce, h.announce, http.StatusOK)
}

func (h *Home) serveRoom(w http.ResponseWriter, r *http.Request, p principal) {
	serveDoor(h, w, r, p, h.cfg.MaxReportBytes, "max-report-bytes", decodeRoomReport, h.reportRoom, http.StatusOK)
}

// serveDoor answers a door's JSON request from p: it reads a body of at
// most limit bytes (key names the limit's config key), decodes it, and
// answers status with what do returns.
func serveDoor[Req, Res any](h *Home, w http.ResponseWriter, r *http.Request, p principal,
	limit int64, key string, decode func([]byte) (Req, error),
	do func(context.Context, principal, Req) (Res, error), status int) {
	res, ok := serveJSON(h, w, r, limit, key, decode, func(ctx context.Context, req Req) (Res, error) {
		return do(ctx, p, req)
	})
	if ok {
		writeJSON(w, status, res)
	}
}

// serveJSON serves a JSON request up to its answer: it reads a body of at
// most limit bytes (key names the limit's config key), decodes it and
// carries it out with do, within the request's time. It returns do's
// result, or answers the error itself and returns false.
func serveJSON[Req, Res any](h *Home, w http.ResponseWriter, r *http.Request,
	limit int64, key string, decode func([]byte) (Req, error),
	do func(context.Context, Req) (Res, error)) (Res, bool) {
	var res Res
	data, err := h.readBodyLimit(w, r, limit, key)
	if err != nil {
		h.fail(w, err)
		return res, false
	}
	req, err := decode(data)
	if err != nil {
		h.fail(w, err)
		return res, false
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	res, err = do(ctx, req)
	if err != nil {
		h.fail(w, err)
		return res, false
	}
	return res, true
}
