// Package memory is the in-memory backplane: the default, for one server,
// for development, and for tests that run many servers in one process.
//
// A Store plays the part of a shared store such as one Redis server; each
// Backplane returned by Store.Cluster is bound to one cluster of it. A
// single server needs only New. Everything is safe for concurrent use, and
// nothing here starts a goroutine: expiry is judged on every read.
package memory

import (
	"context"
	"crypto/rand"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// Config configures a Store. The zero value is ready to use.
type Config struct {
	// Now is the store's clock. Default time.Now, which synctest fakes.
	Now func() time.Time
}

// Store is shared state for any number of clusters.
type Store struct {
	now func() time.Time

	mu       sync.Mutex
	clusters map[string]*cluster
	writes   int // writes since the last sweep of expired entries
}

// sweepEvery is how many writes pass between sweeps of expired entries,
// which bounds memory without a goroutine.
const sweepEvery = 4096

type expiring struct {
	data    []byte
	expires time.Time
}

type counter struct {
	n       int64
	expires time.Time // zero: no expiry
}

type cluster struct {
	nodes    map[string]expiring
	claims   map[backplane.Key]claim
	handoffs map[handoffKey]handoff
	counters map[string]counter
	records  map[string]map[string][]byte
}

type handoffKey struct{ target, id string }

// handoff is a stored handoff and its latest take: token, held by it
// until held.
type handoff struct {
	data    []byte
	expires time.Time
	token   string
	held    time.Time
}

// claim is a claim's holder and, once Reassert gave it a lease, when it
// expires.
type claim struct {
	owner   string
	expires time.Time // zero: no lease
}

func (c claim) expired(now time.Time) bool {
	return !c.expires.IsZero() && !now.Before(c.expires)
}

// holder returns the holder of key, "" when it is unclaimed or its lease
// has run out.
func (c *cluster) holder(key backplane.Key, now time.Time) string {
	cl, ok := c.claims[key]
	if !ok {
		return ""
	}
	if cl.expired(now) {
		delete(c.claims, key)
		return ""
	}
	return cl.owner
}

// NewStore returns an empty store.
func NewStore(cfg Config) *Store {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{now: cfg.Now, clusters: make(map[string]*cluster)}
}

// New returns a backplane for the cluster "default" of a new, private store:
// what one server needs.
func New() *Backplane {
	b, _ := NewStore(Config{}).Cluster("default")
	return b
}

// Cluster returns a backplane bound to the named cluster of s. Backplanes
// of one store and cluster see each other's writes; those of different
// clusters never do.
func (s *Store) Cluster(name string) (*Backplane, error) {
	if err := backplane.ValidateName("cluster", name); err != nil {
		return nil, err
	}
	return &Backplane{store: s, name: name}, nil
}

// Backplane is a cluster's view of a Store. It implements
// backplane.Backplane; Close affects only this value.
type Backplane struct {
	store *Store
	name  string

	mu     sync.Mutex
	closed bool
}

var _ backplane.Backplane = (*Backplane)(nil)

// do runs fn on the cluster's state under the store's lock, after checking
// the context and that b is open.
func (b *Backplane) do(ctx context.Context, write bool, fn func(c *cluster, now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return backplane.ErrClosed
	}
	s := b.store
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[b.name]
	if c == nil {
		c = &cluster{
			nodes:    make(map[string]expiring),
			claims:   make(map[backplane.Key]claim),
			handoffs: make(map[handoffKey]handoff),
			counters: make(map[string]counter),
			records:  make(map[string]map[string][]byte),
		}
		s.clusters[b.name] = c
	}
	now := s.now()
	if write {
		if s.writes++; s.writes >= sweepEvery {
			s.writes = 0
			for _, c := range s.clusters {
				c.sweep(now)
			}
		}
	}
	return fn(c, now)
}

// sweep drops every expired entry, and claims held by nodes that are gone.
func (c *cluster) sweep(now time.Time) {
	maps.DeleteFunc(c.nodes, func(_ string, e expiring) bool { return !now.Before(e.expires) })
	maps.DeleteFunc(c.handoffs, func(_ handoffKey, e handoff) bool { return !now.Before(e.expires) })
	maps.DeleteFunc(c.counters, func(_ string, e counter) bool { return !now.Before(e.expires) })
	maps.DeleteFunc(c.claims, func(_ backplane.Key, cl claim) bool { return cl.expired(now) || !c.live(cl.owner, now) })
}

func (c *cluster) live(id string, now time.Time) bool {
	e, ok := c.nodes[id]
	return ok && now.Before(e.expires)
}

func (c *cluster) list(now time.Time) []backplane.Node {
	out := make([]backplane.Node, 0, len(c.nodes))
	for id, e := range c.nodes {
		if now.Before(e.expires) {
			out = append(out, backplane.Node{ID: id, Data: slices.Clone(e.data), TTL: e.expires.Sub(now)})
		} else {
			delete(c.nodes, id)
		}
	}
	return out
}

// Heartbeat implements backplane.Backplane.
func (b *Backplane) Heartbeat(ctx context.Context, node backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	if err := backplane.ValidateName("node id", node.ID); err != nil {
		return nil, false, err
	}
	var out []backplane.Node
	var created bool
	err := b.do(ctx, true, func(c *cluster, now time.Time) error {
		created = !c.live(node.ID, now)
		c.nodes[node.ID] = expiring{data: slices.Clone(node.Data), expires: now.Add(ttl)}
		out = c.list(now)
		return nil
	})
	return out, created, err
}

// Nodes implements backplane.Backplane.
func (b *Backplane) Nodes(ctx context.Context) ([]backplane.Node, error) {
	var out []backplane.Node
	err := b.do(ctx, false, func(c *cluster, now time.Time) error {
		out = c.list(now)
		return nil
	})
	return out, err
}

// Leave implements backplane.Backplane.
func (b *Backplane) Leave(ctx context.Context, id string) error {
	return b.do(ctx, true, func(c *cluster, _ time.Time) error {
		delete(c.nodes, id)
		return nil
	})
}

// Claim implements backplane.Backplane.
func (b *Backplane) Claim(ctx context.Context, owner string, keys ...backplane.Key) error {
	if err := backplane.ValidateClaim(owner, keys...); err != nil {
		return err
	}
	return b.do(ctx, true, func(c *cluster, now time.Time) error {
		var expires time.Time // the owner's record's: no lease without one
		if c.live(owner, now) {
			expires = c.nodes[owner].expires
		}
		for _, k := range keys {
			c.claims[k] = claim{owner: owner, expires: expires}
		}
		return nil
	})
}

// ClaimUnique implements backplane.Backplane.
func (b *Backplane) ClaimUnique(ctx context.Context, owner string, key backplane.Key) (string, error) {
	if err := backplane.ValidateClaim(owner, key); err != nil {
		return "", err
	}
	holder := owner
	err := b.do(ctx, true, func(c *cluster, now time.Time) error {
		if cur := c.holder(key, now); cur != "" && cur != owner && c.live(cur, now) {
			holder = cur
			return nil
		}
		if c.claims[key].owner != owner {
			c.claims[key] = claim{owner: owner}
		}
		return nil
	})
	return holder, err
}

// Reassert implements backplane.Backplane.
func (b *Backplane) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...backplane.Key) ([]backplane.Key, error) {
	if err := backplane.ValidateClaim(owner, keys...); err != nil {
		return nil, err
	}
	var lost []backplane.Key
	err := b.do(ctx, true, func(c *cluster, now time.Time) error {
		for _, k := range keys {
			if cur := c.holder(k, now); cur != "" && cur != owner && c.live(cur, now) {
				lost = append(lost, k)
				continue
			}
			c.claims[k] = claim{owner: owner, expires: now.Add(lease)}
		}
		return nil
	})
	return lost, err
}

// Release implements backplane.Backplane.
func (b *Backplane) Release(ctx context.Context, owner string, keys ...backplane.Key) error {
	return b.do(ctx, true, func(c *cluster, _ time.Time) error {
		for _, k := range keys {
			if c.claims[k].owner == owner {
				delete(c.claims, k)
			}
		}
		return nil
	})
}

// Locate implements backplane.Backplane.
func (b *Backplane) Locate(ctx context.Context, key backplane.Key) (string, error) {
	var owner string
	err := b.do(ctx, false, func(c *cluster, now time.Time) error {
		owner = c.holder(key, now)
		if owner == "" {
			return backplane.ErrNotFound
		}
		return nil
	})
	return owner, err
}

// Arrive implements backplane.Backplane.
func (b *Backplane) Arrive(ctx context.Context, key backplane.Key, target, id string, hold time.Duration) (string, backplane.Taken, error) {
	var (
		owner string
		taken backplane.Taken
	)
	err := b.do(ctx, true, func(c *cluster, now time.Time) error {
		owner = c.holder(key, now)
		taken, _ = c.takeHandoff(handoffKey{target, id}, now, hold)
		return nil
	})
	return owner, taken, err
}

// PutHandoff implements backplane.Backplane.
func (b *Backplane) PutHandoff(ctx context.Context, target, id string, data []byte, ttl time.Duration) error {
	if err := backplane.ValidateName("handoff target", target); err != nil {
		return err
	}
	return b.do(ctx, true, func(c *cluster, now time.Time) error {
		c.handoffs[handoffKey{target, id}] = handoff{data: slices.Clone(data), expires: now.Add(ttl)}
		return nil
	})
}

// TakeHandoff implements backplane.Backplane.
func (b *Backplane) TakeHandoff(ctx context.Context, target, id string, hold time.Duration) (backplane.Taken, error) {
	var taken backplane.Taken
	err := b.do(ctx, true, func(c *cluster, now time.Time) error {
		var ok bool
		if taken, ok = c.takeHandoff(handoffKey{target, id}, now, hold); !ok {
			return backplane.ErrNotFound
		}
		return nil
	})
	return taken, err
}

// ConfirmHandoff implements backplane.Backplane.
func (b *Backplane) ConfirmHandoff(ctx context.Context, target, id, token string) error {
	return b.do(ctx, true, func(c *cluster, now time.Time) error {
		k := handoffKey{target, id}
		if e, ok := c.handoffs[k]; ok && token != "" && e.token == token {
			delete(c.handoffs, k)
		}
		return nil
	})
}

// takeHandoff takes handoff k for hold and returns its data (empty, not
// nil, for an empty handoff) and the take's token, or false when there is
// none, it has expired or another take holds it.
func (c *cluster) takeHandoff(k handoffKey, now time.Time, hold time.Duration) (backplane.Taken, bool) {
	e, ok := c.handoffs[k]
	if !ok || !now.Before(e.expires) {
		delete(c.handoffs, k)
		return backplane.Taken{}, false
	}
	if now.Before(e.held) {
		return backplane.Taken{}, false
	}
	e.token = rand.Text()
	e.held = now.Add(max(hold, time.Millisecond))
	c.handoffs[k] = e
	data := slices.Clone(e.data)
	if data == nil {
		data = []byte{}
	}
	return backplane.Taken{Data: data, Token: e.token}, true
}

// Increment implements backplane.Backplane.
func (b *Backplane) Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	var n int64
	err := b.do(ctx, true, func(c *cluster, now time.Time) error {
		e, ok := c.counters[key]
		if !ok || (!e.expires.IsZero() && !now.Before(e.expires)) {
			e = counter{}
		}
		e.n += by
		if e.expires.IsZero() {
			e.expires = now.Add(ttl)
		}
		c.counters[key] = e
		n = e.n
		return nil
	})
	return n, err
}

// PutRecord implements backplane.Backplane.
func (b *Backplane) PutRecord(ctx context.Context, collection, id string, data []byte) error {
	if err := backplane.ValidateName("collection", collection); err != nil {
		return err
	}
	return b.do(ctx, true, func(c *cluster, _ time.Time) error {
		coll := c.records[collection]
		if coll == nil {
			coll = make(map[string][]byte)
			c.records[collection] = coll
		}
		coll[id] = slices.Clone(data)
		return nil
	})
}

// Record implements backplane.Backplane.
func (b *Backplane) Record(ctx context.Context, collection, id string) ([]byte, error) {
	var data []byte
	err := b.do(ctx, false, func(c *cluster, _ time.Time) error {
		d, ok := c.records[collection][id]
		if !ok {
			return backplane.ErrNotFound
		}
		data = slices.Clone(d)
		return nil
	})
	return data, err
}

// DeleteRecord implements backplane.Backplane.
func (b *Backplane) DeleteRecord(ctx context.Context, collection, id string) error {
	return b.do(ctx, true, func(c *cluster, _ time.Time) error {
		delete(c.records[collection], id)
		return nil
	})
}

// Records implements backplane.Backplane.
func (b *Backplane) Records(ctx context.Context, collection string) (map[string][]byte, error) {
	out := make(map[string][]byte)
	err := b.do(ctx, false, func(c *cluster, _ time.Time) error {
		for id, d := range c.records[collection] {
			out[id] = slices.Clone(d)
		}
		return nil
	})
	return out, err
}

// Close implements backplane.Backplane. It closes only b; other backplanes
// of the same store keep working.
func (b *Backplane) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}
