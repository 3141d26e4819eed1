// Package redis is the Redis backplane, for fleets of more than one server.
//
// It works over any go-redis v9 UniversalClient, so one Redis, a Sentinel
// group or a Redis Cluster serve alike. Every key of a cluster shares the
// hash tag {cluster}, so each multi-key step is one Lua script, command or
// transaction that Redis Cluster runs on one shard, atomically. Liveness is judged by
// Redis's own key expiry, so the servers' clocks do not matter, and the
// fleet view is read from a per-cluster member set: its cost grows with the
// servers of the cluster, never with the keyspace; and it is versioned, so
// a heartbeat reads only the records that changed (see view.go).
package redis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
)

// Config configures a Redis backplane.
type Config struct {
	// URL locates Redis, in one of the forms ParseAddress accepts: one
	// Redis ("host:port", "redis://user:password@host:port/db",
	// "rediss://..." for TLS), a Sentinel group
	// ("redis://user:password@s1:26379?master_name=M&addr=s2:26379"), or a
	// Redis Cluster ("redis://user:password@seed:6379?cluster=true").
	// Required by Open.
	URL string `yaml:"url"`

	// Cluster namespaces every key; servers with the same cluster name form
	// one fleet. Default "default".
	Cluster string `yaml:"cluster"`

	// Timeout bounds dialing and each socket read and write, below any
	// deadline the caller's context sets, unless the URL's dial_timeout,
	// read_timeout or write_timeout says otherwise. Default DefaultTimeout
	// (500ms).
	Timeout time.Duration `yaml:"timeout"`

	// TLSCAFile is a PEM file of the certificate authorities that sign
	// Redis's certificates, for a rediss:// URL. Default "": the system's.
	TLSCAFile string `yaml:"tls-ca-file"`

	// TLSCertFile and TLSKeyFile are a PEM certificate and its key that
	// this server shows Redis (mutual TLS), for a rediss:// URL. Both or
	// neither. Default "": none.
	TLSCertFile string `yaml:"tls-cert-file"`
	TLSKeyFile  string `yaml:"tls-key-file"`

	// dial, when set, wraps every dial: tests use it to cut connections.
	dial func(next Dialer) Dialer
}

// Dialer dials a connection to Redis, as go-redis's Options.Dialer does.
type Dialer = func(ctx context.Context, network, addr string) (net.Conn, error)

// Backplane is a backplane.Backplane on Redis. It is safe for concurrent
// use; Close closes the client when Open made it.
type Backplane struct {
	rdb       goredis.UniversalClient
	ownClient bool
	prefix    string // "muster:{cluster}:"
	view      view
}

var _ backplane.Backplane = (*Backplane)(nil)

// Open connects to the Redis named by cfg.URL with options chosen for a
// control plane: a short dial timeout, socket reads bounded by the call's
// context, no retries, and for a Redis Cluster a slot map reloaded every
// second and after every failed call, so that an unreachable Redis fails a
// call fast instead of hanging a heartbeat and a failover is followed
// within seconds. Options the URL gives (dial_timeout, max_retries, ...)
// are respected. Open does not wait for Redis to answer.
//
// go-redis's own package-level logger, which logs every failed dial, is
// silenced when this package is loaded (the fleet reports an outage once);
// a program that wants those lines calls goredis.SetLogger.
func Open(cfg Config) (*Backplane, error) {
	a, err := ParseAddress(cfg.URL)
	if err != nil {
		return nil, err
	}
	rdb, err := newClient(a, cfg)
	if err != nil {
		return nil, err
	}
	b, err := New(rdb, cfg.Cluster)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	b.ownClient = true
	return b, nil
}

// New returns a backplane for the named cluster over rdb. The caller keeps
// ownership of rdb (Close does not close it) and should set
// ContextTimeoutEnabled so that deadlines bound socket reads.
func New(rdb goredis.UniversalClient, cluster string) (*Backplane, error) {
	if cluster == "" {
		cluster = "default"
	}
	if err := backplane.ValidateName("cluster", cluster); err != nil {
		return nil, err
	}
	return &Backplane{
		rdb:    rdb,
		prefix: "muster:{" + cluster + "}:",
		view:   view{tombstones: tombstoneTTL, recs: map[string]string{}, wrote: map[string]wrote{}},
	}, nil
}

// Close implements backplane.Backplane.
func (b *Backplane) Close() error {
	if !b.ownClient {
		return nil
	}
	err := b.rdb.Close()
	if errors.Is(err, goredis.ErrClosed) {
		return nil
	}
	return err
}

func (b *Backplane) nodesKey() string         { return b.prefix + "nodes" }
func (b *Backplane) nodeKey(id string) string { return b.prefix + "n:" + id }
func (b *Backplane) claimKey(k backplane.Key) string {
	return b.prefix + "c:" + k.Kind + ":" + k.ID
}

// handoffKeys are a handoff's three keys: its data, the token of its
// latest take (which lives as long as the data), and the mark of that
// take's hold (which lives as long as the hold).
func (b *Backplane) handoffKeys(target, id string) []string {
	t := target + ":" + id
	return []string{b.prefix + "h:" + t, b.prefix + "ht:" + t, b.prefix + "hh:" + t}
}
func (b *Backplane) counterKey(key string) string  { return b.prefix + "k:" + key }
func (b *Backplane) recordsKey(coll string) string { return b.prefix + "r:" + coll }

// wrap turns a client error into the backplane's: ErrClosed after Close,
// otherwise the error with the operation named.
func wrap(op string, err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		err = backplane.ErrClosed
	}
	return fmt.Errorf("backplane/redis: %s: %w", op, err)
}

var (
	// KEYS: claims. ARGV: owner.
	releaseScript = goredis.NewScript(`
for _, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then redis.call('DEL', k) end
end
return 0
`)

	// KEYS: a handoff's data, token and hold (handoffKeys). ARGV: the
	// take's token, hold ms. Returns the data, or nil when there is none
	// or another take holds it. The token lives as long as the data, the
	// hold at most as long.
	takeScript = goredis.NewScript(takeLua + `
return take(1, ARGV[1], tonumber(ARGV[2]))
`)

	// KEYS: the claim, then the handoff's keys as for takeScript. ARGV as
	// for takeScript. Returns {owner, data}, each nil when there is none.
	arriveScript = goredis.NewScript(takeLua + `
return {redis.call('GET', KEYS[1]), take(2, ARGV[1], tonumber(ARGV[2]))}
`)

	// KEYS: a handoff's keys as for takeScript. ARGV: a take's token.
	// Removes the handoff if the token is its latest take's.
	confirmScript = goredis.NewScript(`
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[1], KEYS[2], KEYS[3]) end
return 0
`)

	// KEYS: counter. ARGV: by, ttl ms. Sets the expiry on the first
	// increment, and again whenever it is found missing.
	incrementScript = goredis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n
`)
)

// takeLua defines take(i, token, hold): it takes the handoff whose data
// key is KEYS[i] (its token and hold keys follow) for hold ms and returns
// its data, or false.
const takeLua = `
local function take(i, token, hold)
  if redis.call('EXISTS', KEYS[i+2]) == 1 then return false end
  local d = redis.call('GET', KEYS[i])
  if not d then return false end
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl > 0 then
    redis.call('SET', KEYS[i+1], token, 'PX', ttl)
    redis.call('SET', KEYS[i+2], token, 'PX', math.min(hold, ttl))
  else
    redis.call('SET', KEYS[i+1], token)
    redis.call('SET', KEYS[i+2], token, 'PX', hold)
  end
  return d
end
`

// Release implements backplane.Backplane with one script call.
func (b *Backplane) Release(ctx context.Context, owner string, keys ...backplane.Key) error {
	if len(keys) == 0 {
		return nil
	}
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = b.claimKey(k)
	}
	if err := releaseScript.Run(ctx, b.rdb, ks, owner).Err(); err != nil {
		return wrap("release", err)
	}
	return nil
}

// Locate implements backplane.Backplane with one GET.
func (b *Backplane) Locate(ctx context.Context, key backplane.Key) (string, error) {
	owner, err := b.rdb.Get(ctx, b.claimKey(key)).Result()
	if errors.Is(err, goredis.Nil) {
		return "", backplane.ErrNotFound
	}
	if err != nil {
		return "", wrap("locate", err)
	}
	return owner, nil
}

// Arrive implements backplane.Backplane with one script call.
func (b *Backplane) Arrive(ctx context.Context, key backplane.Key, target, id string, hold time.Duration) (string, backplane.Taken, error) {
	token := rand.Text()
	keys := append([]string{b.claimKey(key)}, b.handoffKeys(target, id)...)
	res, err := arriveScript.Run(ctx, b.rdb, keys, token, ttlMillis(hold)).Slice()
	if err != nil {
		return "", backplane.Taken{}, wrap("arrive", err)
	}
	if len(res) != 2 {
		return "", backplane.Taken{}, wrap("arrive", fmt.Errorf("%d values in the reply, want 2", len(res)))
	}
	owner, _ := res[0].(string)
	var taken backplane.Taken
	if d, ok := res[1].(string); ok {
		taken = backplane.Taken{Data: bytesOf(d), Token: token}
	}
	return owner, taken, nil
}

// PutHandoff implements backplane.Backplane: the data's SET and the
// removal of an earlier handoff's take in one transaction.
func (b *Backplane) PutHandoff(ctx context.Context, target, id string, data []byte, ttl time.Duration) error {
	if err := backplane.ValidateName("handoff target", target); err != nil {
		return err
	}
	keys := b.handoffKeys(target, id)
	_, err := b.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, keys[0], data, ttl)
		p.Del(ctx, keys[1], keys[2])
		return nil
	})
	if err != nil {
		return wrap("put handoff", err)
	}
	return nil
}

// TakeHandoff implements backplane.Backplane with one script call.
func (b *Backplane) TakeHandoff(ctx context.Context, target, id string, hold time.Duration) (backplane.Taken, error) {
	token := rand.Text()
	d, err := takeScript.Run(ctx, b.rdb, b.handoffKeys(target, id), token, ttlMillis(hold)).Text()
	if errors.Is(err, goredis.Nil) {
		return backplane.Taken{}, backplane.ErrNotFound
	}
	if err != nil {
		return backplane.Taken{}, wrap("take handoff", err)
	}
	return backplane.Taken{Data: bytesOf(d), Token: token}, nil
}

// ConfirmHandoff implements backplane.Backplane with one script call.
func (b *Backplane) ConfirmHandoff(ctx context.Context, target, id, token string) error {
	if token == "" {
		return nil
	}
	if err := confirmScript.Run(ctx, b.rdb, b.handoffKeys(target, id), token).Err(); err != nil {
		return wrap("confirm handoff", err)
	}
	return nil
}

// Increment implements backplane.Backplane.
func (b *Backplane) Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error) {
	n, err := incrementScript.Run(ctx, b.rdb, []string{b.counterKey(key)}, by, ttlMillis(ttl)).Int64()
	if err != nil {
		return 0, wrap("increment", err)
	}
	return n, nil
}

// PutRecord implements backplane.Backplane.
func (b *Backplane) PutRecord(ctx context.Context, collection, id string, data []byte) error {
	if err := backplane.ValidateName("collection", collection); err != nil {
		return err
	}
	if err := b.rdb.HSet(ctx, b.recordsKey(collection), id, data).Err(); err != nil {
		return wrap("put record", err)
	}
	return nil
}

// Record implements backplane.Backplane.
func (b *Backplane) Record(ctx context.Context, collection, id string) ([]byte, error) {
	data, err := b.rdb.HGet(ctx, b.recordsKey(collection), id).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, backplane.ErrNotFound
	}
	if err != nil {
		return nil, wrap("record", err)
	}
	return data, nil
}

// DeleteRecord implements backplane.Backplane.
func (b *Backplane) DeleteRecord(ctx context.Context, collection, id string) error {
	if err := b.rdb.HDel(ctx, b.recordsKey(collection), id).Err(); err != nil {
		return wrap("delete record", err)
	}
	return nil
}

// Records implements backplane.Backplane.
func (b *Backplane) Records(ctx context.Context, collection string) (map[string][]byte, error) {
	m, err := b.rdb.HGetAll(ctx, b.recordsKey(collection)).Result()
	if err != nil {
		return nil, wrap("records", err)
	}
	out := make(map[string][]byte, len(m))
	for id, v := range m {
		out[id] = []byte(v)
	}
	return out, nil
}

// bytesOf returns s as bytes, empty but not nil for "".
func bytesOf(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// ttlMillis rounds ttl up to whole milliseconds, at least one.
func ttlMillis(ttl time.Duration) int64 {
	return max(1, int64((ttl+time.Millisecond-1)/time.Millisecond))
}
