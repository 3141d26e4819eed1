package federation

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/muster-gg/muster/backplane"
)

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
	return h.changeNode(ctx, nodeID, "federation: node approved", func(n *nodeRecord) (bool, error) {
		if n.Revoked {
			return false, fmt.Errorf("approve node %q: %w", nodeID, ErrRevoked)
		}
		if n.Approved {
			return false, nil
		}
		n.Approved, n.ApprovedAt = true, h.now()
		return true, nil
	})
}

// RevokeNode takes a node out of rotation for good: its node key and every
// server key it enrolled are refused from now on, and its room reports are
// forgotten. Revoking a revoked node does nothing.
func (h *Home) RevokeNode(ctx context.Context, nodeID string) error {
	now := h.now()
	err := h.changeNode(ctx, nodeID, "federation: node revoked", func(n *nodeRecord) (bool, error) {
		if n.Revoked {
			return false, nil
		}
		n.Revoked, n.Approved, n.RevokedAt = true, false, now
		return true, nil
	})
	if err != nil {
		return err
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

// changeNode applies change to node nodeID's record by compare-and-set;
// change reports whether it changed the record. A change clears the
// regions cache and is logged with msg.
func (h *Home) changeNode(ctx context.Context, nodeID, msg string, change func(*nodeRecord) (bool, error)) error {
	changed := false
	err := h.update(ctx, func() ([]backplane.RecordSwap, error) {
		n, raw, err := h.nodeRaw(ctx, nodeID)
		if err != nil {
			return nil, err
		}
		ok, err := change(&n)
		if err != nil || !ok {
			return nil, err
		}
		changed = true // by this try, or by one that lost its swap
		return []backplane.RecordSwap{set(collNodes, n.ID, raw, n)}, nil
	})
	if err != nil {
		return err
	}
	if changed {
		h.invalidate()
		h.log.Info(msg, "node_id", nodeID)
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

// createNodeResponse is the answer to POST /nodes.
type createNodeResponse struct {
	Node NodeInfo `json:"node"`
	// Key is the node key, shown this once.
	Key string `json:"key"`
}

// serveCreateNode answers POST /nodes; the answer, which holds the node
// key, is not to be stored.
func (h *Home) serveCreateNode(w http.ResponseWriter, r *http.Request) {
	res, ok := serveJSON(h, w, r, h.cfg.MaxBody, "max-body", decodeNodeSpec, h.createNodeAnswer)
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, res)
}

// createNodeAnswer is CreateNode with its answer to POST /nodes.
func (h *Home) createNodeAnswer(ctx context.Context, spec NodeSpec) (createNodeResponse, error) {
	info, key, err := h.CreateNode(ctx, spec)
	return createNodeResponse{Node: info, Key: key}, err
}

// nodeList is the answer to GET /nodes.
func (h *Home) nodeList(ctx context.Context, _ string) (map[string][]NodeInfo, error) {
	nodes, err := h.Nodes(ctx)
	return map[string][]NodeInfo{"nodes": nodes}, err
}

// adminGet answers a GET of the admin API with what fn returns for the
// path's {id} ("" where the path has none).
func adminGet[T any](h *Home, fn func(context.Context, string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := h.ctx(r)
		defer cancel()
		v, err := fn(ctx, chi.URLParam(r, "id"))
		if err != nil {
			h.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// adminAction answers a POST of the admin API that fn carries out on the
// path's {id}, with 204 No Content.
func (h *Home) adminAction(fn func(context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := h.ctx(r)
		defer cancel()
		if err := fn(ctx, chi.URLParam(r, "id")); err != nil {
			h.fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
