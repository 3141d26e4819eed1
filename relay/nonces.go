package relay

import (
	"encoding/base64"
	"sync"
	"time"
)

// nonces remembers the nonce of every set of relay headers a Relay
// accepted, for twice the freshness window, so that a set vouches for one
// request only: headers captured on their way between two servers and
// sent again, as they were or with another query, are refused.
type nonces struct {
	mu        sync.Mutex
	seen      map[[nonceLen]byte]time.Time // when each may be forgotten
	nextPrune int                          // the size at which expired ones are removed
	soonest   time.Time                    // no nonce may be forgotten before
}

// nonceLen is the length of a nonce, decoded.
const nonceLen = 16

// maxNonces bounds how many nonces a Relay remembers. Only a holder of the
// secret can add one. At the default freshness window each is kept a
// minute, so the bound is reached only by more than 4,000 relayed
// connections a second, sustained; a relayed request is then served as
// one from the relaying server, rather than let the memory grow.
const maxNonces = 1 << 18

// use records nonce (nonceLen bytes, base64url) as used at now, to be
// remembered until now+keep, and returns errReplayed if it was used
// already.
func (n *nonces) use(nonce string, now time.Time, keep time.Duration) error {
	var k [nonceLen]byte
	if len(nonce) != base64.RawURLEncoding.EncodedLen(nonceLen) {
		return errMalformed
	}
	if m, err := base64.RawURLEncoding.Decode(k[:], []byte(nonce)); err != nil || m != nonceLen {
		return errMalformed
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if until, ok := n.seen[k]; ok && now.Before(until) {
		return errReplayed
	}
	if len(n.seen) >= n.nextPrune || len(n.seen) >= maxNonces && !now.Before(n.soonest) {
		n.prune(now)
	}
	if len(n.seen) >= maxNonces {
		return errTooMany
	}
	if n.seen == nil {
		n.seen = make(map[[nonceLen]byte]time.Time)
	}
	until := now.Add(keep)
	if len(n.seen) == 0 || until.Before(n.soonest) {
		n.soonest = until
	}
	n.seen[k] = until
	return nil
}

// prune forgets the nonces that expired by now.
func (n *nonces) prune(now time.Time) {
	n.soonest = time.Time{}
	for k, until := range n.seen {
		switch {
		case !now.Before(until):
			delete(n.seen, k)
		case n.soonest.IsZero() || until.Before(n.soonest):
			n.soonest = until
		}
	}
	n.nextPrune = max(1024, 2*len(n.seen))
}
