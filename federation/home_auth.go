package federation

import (
	"context"
	"fmt"
)

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
