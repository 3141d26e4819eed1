package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
)

// The fleet view is versioned, so that a heartbeat reads only the records
// that changed since the reader's last one instead of every record: the
// cost of the view then grows with the changes, not with the square of the
// fleet. Besides each node's expiring key (n:<id>, which holds its record
// and decides its liveness; ClaimUnique checks it too), the cluster keeps:
//
//	v:data  hash  id → record of every node in the view
//	v:log   zset  one member per node, "id\0+record" or the tombstone
//	              "id\0-", scored by the cluster sequence number of the
//	              node's last change
//	v:exp   zset  id → when its key expires (Redis TIME, ms): an index that
//	              finds the expired without a scan (the key's own expiry
//	              decides); and "\0id" → when id's tombstone is forgotten
//	v:meta  hash  seq (last sequence number), epoch (when the state began;
//	              a new epoch means Redis lost it), floor (the newest
//	              forgotten tombstone)
//
// A heartbeat that changes the record (or is the node's first, or follows
// one whose outcome is unknown) is one MULTI/EXEC: a script, then
// ZRANGEBYSCORE v:log from the reader's sequence number. The script reads
// the part of v:exp due within half the caller's ttl (it drops the expired
// nodes, forgets old tombstones, and returns the nodes that have missed
// heartbeats with the time they have left), writes the record with
// SET ... GET, and touches the view when the view's copy differs; then
// returns epoch, seq, floor and Redis's time.
//
// A heartbeat whose record has not changed, the usual one, runs no script
// while the client's last heartbeat is less than half a ttl old: a
// MULTI/EXEC of plain commands (see plain) does the same in Redis's
// cheaper way, with the expiry in v:exp reckoned from the time Redis last
// returned (never later than Redis's own, so the index finds a node no
// later than its key expires). When the key or the view's copy holds
// another record, Redis's clock went back, or a node in the index is past
// its time, the script runs after it, a second round trip; so it does when
// a reader is new, or its epoch or sequence number is too old, to read the
// whole log.

// tombstoneTTL is how long a removal stays in the log. A reader that has
// not read the view for longer reads it whole.
const tombstoneTTL = time.Minute

// view is a Backplane's cache of the fleet view, shared by its callers.
type view struct {
	tombstones time.Duration

	mu    sync.Mutex
	epoch string // "" until the first read
	seq   int64
	recs  map[string]string

	// For the plain heartbeat: the heartbeat that last succeeded, by
	// id, and Redis's clock as the last reply gave it.
	wrote   map[string]wrote
	storeMs int64     // Redis TIME, ms
	at      time.Time // when storeMs arrived

	// due are the nodes the last reply said are about to expire: the
	// next script is given their keys, so that it may check them.
	due []string
}

// maxDue bounds the node keys a view script is given.
const maxDue = 64

// wrote is a heartbeat that succeeded: the record it wrote, when it was
// sent, before which its key cannot have expired, and the ttl it gave the
// key.
type wrote struct {
	rec  string
	sent time.Time
	ttl  time.Duration
}

// keys returns the KEYS of every view script: the node's key, then the
// view's.
func (b *Backplane) viewKeys(id string) []string {
	p := b.prefix
	return []string{p + "n:" + id, p + "v:data", p + "v:log", p + "v:exp", p + "v:meta"}
}

// viewLua is the part the view scripts share. ARGV[1] is the node-key
// prefix, ARGV[2] how long tombstones stay, in ms. KEYS[6] on are the keys
// of nodes the reader expects to expire (view.due): a script touches no
// key it was not given, so an expired index entry is checked against its
// node's key when that key was given, and otherwise judged by the index
// alone, which never runs ahead of the key's expiry by more than a round
// trip (a node is in view.due for at least one heartbeat of a reader that
// heartbeats before it is due).
const viewLua = `
redis.replicate_commands() -- Redis < 5: allows writes after TIME
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local declared = {}
for i = 6, #KEYS do declared[string.sub(KEYS[i], #ARGV[1] + 1)] = KEYS[i] end
local function bump() return redis.call('HINCRBY', KEYS[5], 'seq', 1) end
local function remove(id)
  local old = redis.call('HGET', KEYS[2], id)
  if old then
    redis.call('ZREM', KEYS[3], id .. '\0+' .. old)
    redis.call('HDEL', KEYS[2], id)
    redis.call('ZADD', KEYS[3], bump(), id .. '\0-')
    redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), '\0' .. id)
  end
  redis.call('ZREM', KEYS[4], id)
end
local function forget(id)
  local s = redis.call('ZSCORE', KEYS[3], id .. '\0-')
  redis.call('ZREM', KEYS[3], id .. '\0-')
  redis.call('ZREM', KEYS[4], '\0' .. id)
  if s and tonumber(s) > tonumber(redis.call('HGET', KEYS[5], 'floor') or '0') then
    redis.call('HSET', KEYS[5], 'floor', s)
  end
end
-- scan drops the expired nodes, forgets old tombstones, and returns the
-- nodes other than self that expire by horizon: id, ms left, ...
local function scan(horizon, self)
  local soon = {}
  local due = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', horizon, 'WITHSCORES')
  for i = 1, #due, 2 do
    local m, at = due[i], tonumber(due[i + 1])
    if string.byte(m, 1) == 0 then
      if at <= now then forget(string.sub(m, 2)) end
    elseif at <= now then
      local k = declared[m]
      if not k or redis.call('EXISTS', k) == 0 then remove(m) end
    elseif m ~= self then
      soon[#soon + 1] = m
      soon[#soon + 1] = at - now
    end
  end
  return soon
end
local function reply(created, soon)
  local m = redis.call('HMGET', KEYS[5], 'epoch', 'seq', 'floor')
  if not m[1] then
    m[1] = t[1] .. '.' .. t[2]
    redis.call('HSET', KEYS[5], 'epoch', m[1])
  end
  return {created, m[1], tonumber(m[2] or '0'), tonumber(m[3] or '0'), soon, now}
end
`

var (
	// ARGV[3] id, ARGV[4] record, ARGV[5] ttl ms.
	viewHeartbeat = goredis.NewScript(viewLua + `
local id, rec, ttl = ARGV[3], ARGV[4], tonumber(ARGV[5])
local soon = scan(now + math.floor(ttl / 2), id)
local old = redis.call('SET', KEYS[1], rec, 'PX', ttl, 'GET')
redis.call('ZADD', KEYS[4], now + ttl, id)
-- The view's copy decides whether the record changed: a plain heartbeat
-- may have left the key holding a record the view does not (see plain).
local cur = redis.call('HGET', KEYS[2], id)
if cur ~= rec then
  if cur then
    redis.call('ZREM', KEYS[3], id .. '\0+' .. cur)
  else
    redis.call('ZREM', KEYS[3], id .. '\0-')
    redis.call('ZREM', KEYS[4], '\0' .. id)
  end
  redis.call('HSET', KEYS[2], id, rec)
  redis.call('ZADD', KEYS[3], bump(), id .. '\0+' .. rec)
end
return reply(old and 0 or 1, soon)
`)

	viewNodes = goredis.NewScript(viewLua + `return reply(0, scan(now, ''))`)

	// ARGV[3] id.
	viewLeave = goredis.NewScript(viewLua + `
scan(now, '')
redis.call('DEL', KEYS[1])
remove(ARGV[3])
return reply(0, {})
`)
)

// viewReply is what one view transaction returned.
type viewReply struct {
	created      bool
	epoch        string
	seq, floor   int64
	members      []string // v:log members after the sequence number asked for
	wholeLogRead bool
	soon         map[string]time.Duration // nodes about to expire: time left
	now          int64                    // Redis TIME, ms
}

// run runs script and, in the same transaction, reads the log after since
// (all of it when since is negative). A script unknown to Redis (first use,
// or Redis restarted) is loaded and the transaction run again.
func (b *Backplane) run(ctx context.Context, script *goredis.Script, id string, since int64, args ...any) (viewReply, error) {
	keys := b.viewKeys(id)
	b.view.mu.Lock()
	for _, d := range b.view.due {
		if d != id {
			keys = append(keys, b.prefix+"n:"+d)
		}
	}
	b.view.mu.Unlock()
	args = append([]any{b.prefix + "n:", b.view.tombstones.Milliseconds(), id}, args...)
	from := "-inf"
	if since >= 0 {
		from = "(" + strconv.FormatInt(since, 10)
	}
	for loaded := false; ; loaded = true {
		var ev *goredis.Cmd
		var changed *goredis.StringSliceCmd
		_, err := b.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			ev = script.EvalSha(ctx, p, keys, args...)
			changed = p.ZRangeByScore(ctx, keys[2], &goredis.ZRangeBy{Min: from, Max: "+inf"})
			return nil
		})
		if err != nil && !loaded && strings.Contains(err.Error(), "NOSCRIPT") {
			if err := script.Load(ctx, b.rdb).Err(); err != nil {
				return viewReply{}, err
			}
			continue
		}
		if err != nil {
			return viewReply{}, err
		}
		r, err := ev.Slice()
		if err != nil {
			return viewReply{}, err
		}
		if len(r) != 6 {
			return viewReply{}, fmt.Errorf("view script: reply of %d elements", len(r))
		}
		created, _ := r[0].(int64)
		epoch, _ := r[1].(string)
		seq, _ := r[2].(int64)
		floor, _ := r[3].(int64)
		var soon map[string]time.Duration
		if pairs, _ := r[4].([]any); len(pairs) > 0 {
			soon = make(map[string]time.Duration, len(pairs)/2)
			for i := 0; i+1 < len(pairs); i += 2 {
				id, _ := pairs[i].(string)
				ms, _ := pairs[i+1].(int64)
				soon[id] = time.Duration(ms) * time.Millisecond
			}
		}
		now, _ := r[5].(int64)
		return viewReply{created: created == 1, epoch: epoch, seq: seq, floor: floor, members: changed.Val(), wholeLogRead: since < 0, soon: soon, now: now}, nil
	}
}

// read brings the cache up to date with what fetch returns (fetch reads
// the log after since, all of it when since is negative) and returns the
// view.
func (b *Backplane) read(ctx context.Context, fetch func(since int64) (viewReply, error)) (viewReply, []backplane.Node, error) {
	b.view.mu.Lock()
	since := b.view.seq
	if b.view.epoch == "" {
		since = -1
	}
	epoch := b.view.epoch
	b.view.mu.Unlock()

	m, err := fetch(since)
	if err == nil && !m.wholeLogRead && (m.epoch != epoch || since < m.floor) {
		// Redis lost the view, or this reader missed tombstones that are
		// forgotten: read the whole log, a second round trip.
		created, soon := m.created, m.soon
		m, err = b.run(ctx, viewNodes, "", -1)
		m.created, m.soon = created, soon
	}
	if err != nil {
		return viewReply{}, nil, err
	}

	b.view.mu.Lock()
	defer b.view.mu.Unlock()
	if m.now > 0 {
		b.view.storeMs, b.view.at = m.now, time.Now()
	}
	b.view.due = b.view.due[:0]
	for id := range m.soon {
		if len(b.view.due) < maxDue {
			b.view.due = append(b.view.due, id)
		}
	}
	switch {
	case m.wholeLogRead && (m.epoch != b.view.epoch || m.seq >= b.view.seq):
		b.view.recs = make(map[string]string, len(m.members))
		b.view.epoch, b.view.seq = m.epoch, m.seq
		b.apply(m.members)
	case !m.wholeLogRead && m.epoch == b.view.epoch && m.seq >= b.view.seq:
		b.view.seq = m.seq
		b.apply(m.members)
	} // else a later read has already brought the cache further
	nodes := make([]backplane.Node, 0, len(b.view.recs))
	for id, rec := range b.view.recs {
		nodes = append(nodes, backplane.Node{ID: id, Data: []byte(rec), TTL: m.soon[id]})
	}
	return m, nodes, nil
}

// apply applies log members to the cache. b.view.mu must be held.
func (b *Backplane) apply(members []string) {
	for _, mem := range members {
		id, rest, ok := strings.Cut(mem, "\x00")
		switch {
		case !ok || rest == "":
		case rest[0] == '+':
			b.view.recs[id] = rest[1:]
		default:
			delete(b.view.recs, id)
		}
	}
}

// Heartbeat implements backplane.Backplane in one round trip (two when
// Redis lost its state, this reader has not read for longer than
// tombstones stay, or a plain heartbeat finds it cannot stand alone).
func (b *Backplane) Heartbeat(ctx context.Context, node backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	if err := backplane.ValidateName("node id", node.ID); err != nil {
		return nil, false, err
	}
	rec, ms := string(node.Data), ttlMillis(ttl)
	m, nodes, err := b.read(ctx, func(since int64) (viewReply, error) {
		b.view.mu.Lock()
		last, ok := b.view.wrote[node.ID]
		delete(b.view.wrote, node.ID) // until this heartbeat is known to have done its part
		sent := time.Now()
		// Plain only while the last heartbeat's key cannot have expired
		// (by the ttl it was written with, not this one's): were it gone
		// and this reply lost, plain's ZADD would have moved a dead
		// node's expiry on.
		ok = ok && last.rec == rec && sent.Sub(last.sent) < min(ttl, last.ttl)/2 && !b.view.at.IsZero()
		est := b.view.storeMs + sent.Sub(b.view.at).Milliseconds()
		b.view.mu.Unlock()
		var (
			m    viewReply
			done bool
			err  error
		)
		if ok && since >= 0 {
			m, done, err = b.plain(ctx, node.ID, rec, ms, est, since)
		}
		if !done && err == nil {
			m, err = b.run(ctx, viewHeartbeat, node.ID, since, rec, ms)
		}
		if err == nil {
			b.view.mu.Lock()
			b.view.wrote[node.ID] = wrote{rec: rec, sent: sent, ttl: ttl}
			b.view.mu.Unlock()
		}
		return m, err
	})
	if err != nil {
		return nil, false, wrap("heartbeat", err)
	}
	return nodes, m.created, nil
}

// plain is a heartbeat whose record has not changed, made of plain
// commands in one MULTI/EXEC: it refreshes the node's key if it is still
// there, sets its expiry in the index from Redis's time as this client
// reckons it (est, ms), and reads what the script would return. It is
// done when the key and the view's copy both held the record, Redis's
// clock is not behind est, and no node in the index is past its time;
// otherwise the script is to run. Its writes do not depend on what it
// reads: whatever must be decided from Redis's state (dropping a node,
// changing the view) the script decides, in one step (SPEC B3).
func (b *Backplane) plain(ctx context.Context, id, rec string, ttl, est, since int64) (m viewReply, done bool, err error) {
	keys := b.viewKeys(id)
	var (
		now  *goredis.TimeCmd
		set  *goredis.StatusCmd
		cur  *goredis.StringCmd
		due  *goredis.ZSliceCmd
		meta *goredis.SliceCmd
		log  *goredis.StringSliceCmd
	)
	_, err = b.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		now = p.Time(ctx)
		set = p.SetArgs(ctx, keys[0], rec, goredis.SetArgs{Mode: "XX", Get: true, TTL: time.Duration(ttl) * time.Millisecond})
		cur = p.HGet(ctx, keys[1], id)
		p.ZAdd(ctx, keys[3], goredis.Z{Score: float64(est + ttl), Member: id})
		due = p.ZRangeByScoreWithScores(ctx, keys[3], &goredis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(est+ttl/2, 10)})
		meta = p.HMGet(ctx, keys[4], "epoch", "seq", "floor")
		log = p.ZRangeByScore(ctx, keys[2], &goredis.ZRangeBy{Min: "(" + strconv.FormatInt(since, 10), Max: "+inf"})
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return viewReply{}, false, err
	}
	t, err := now.Result()
	if err != nil {
		return viewReply{}, false, err
	}
	m.now = t.UnixMilli()
	if old, err := set.Result(); err != nil || old != rec {
		return viewReply{}, false, nil
	}
	if c, err := cur.Result(); err != nil || c != rec {
		return viewReply{}, false, nil
	}
	if m.now < est {
		// Redis's clock went back (a failover to a host behind, say): the
		// script sets the expiry from Redis's own.
		return viewReply{}, false, nil
	}
	for _, z := range due.Val() {
		mem, _ := z.Member.(string)
		at := int64(z.Score)
		switch {
		case at <= m.now:
			return viewReply{}, false, nil
		case mem != id && !strings.HasPrefix(mem, "\x00"):
			if m.soon == nil {
				m.soon = make(map[string]time.Duration)
			}
			m.soon[mem] = time.Duration(at-m.now) * time.Millisecond
		}
	}
	v := meta.Val()
	if len(v) != 3 {
		return viewReply{}, false, fmt.Errorf("view meta: reply of %d elements", len(v))
	}
	m.epoch, _ = v[0].(string)
	if s, _ := v[1].(string); s != "" {
		m.seq, _ = strconv.ParseInt(s, 10, 64)
	}
	if s, _ := v[2].(string); s != "" {
		m.floor, _ = strconv.ParseInt(s, 10, 64)
	}
	m.members = log.Val()
	return m, true, nil
}

// Nodes implements backplane.Backplane in one round trip.
func (b *Backplane) Nodes(ctx context.Context) ([]backplane.Node, error) {
	_, nodes, err := b.read(ctx, func(since int64) (viewReply, error) { return b.run(ctx, viewNodes, "", since) })
	if err != nil {
		return nil, wrap("nodes", err)
	}
	return nodes, nil
}

// Leave implements backplane.Backplane.
func (b *Backplane) Leave(ctx context.Context, id string) error {
	b.view.mu.Lock()
	delete(b.view.wrote, id)
	b.view.mu.Unlock()
	if _, _, err := b.read(ctx, func(since int64) (viewReply, error) { return b.run(ctx, viewLeave, id, since) }); err != nil {
		return wrap("leave", err)
	}
	return nil
}
