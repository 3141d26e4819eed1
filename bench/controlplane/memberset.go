package main

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/redis"
)

// memberSet is the fleet view as backplane/redis first kept it, kept here
// as the baseline the versioned view is measured against: a member set of
// node ids, and a heartbeat that is one Lua script writing the record and
// returning every live record, so that each of K servers reads K records
// every heartbeat. Claims, handoffs and the rest are the real Backplane's.
type memberSet struct {
	*redis.Backplane
	rdb    goredis.UniversalClient
	prefix string
}

func newMemberSet(rdb goredis.UniversalClient, cluster string) (backplane.Backplane, error) {
	b, err := redis.New(rdb, cluster)
	if err != nil {
		return nil, err
	}
	if cluster == "" {
		cluster = "default"
	}
	return &memberSet{Backplane: b, rdb: rdb, prefix: "muster:{" + cluster + "}:"}, nil
}

// listNodes reads every member's record with MGET, in chunks below Lua's
// unpack limit, and drops members whose record expired. KEYS[1] is the
// member set, ARGV[1] the node-key prefix.
const listNodes = `
local ids = redis.call('SMEMBERS', KEYS[1])
local out = {}
for first = 1, #ids, 1000 do
  local keys = {}
  local last = math.min(first + 999, #ids)
  for i = first, last do keys[#keys + 1] = ARGV[1] .. ids[i] end
  local vals = redis.call('MGET', unpack(keys))
  for i = first, last do
    local v = vals[i - first + 1]
    if v then
      out[#out + 1] = ids[i]
      out[#out + 1] = v
    else
      redis.call('SREM', KEYS[1], ids[i])
    end
  end
end
return out
`

var (
	memberBeat = goredis.NewScript(`
local created = 1 - redis.call('EXISTS', KEYS[2])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
redis.call('SADD', KEYS[1], ARGV[2])
local function list()
` + listNodes + `
end
local out = list()
table.insert(out, 1, created)
return out
`)
	memberNodes = goredis.NewScript(listNodes)
)

func (m *memberSet) Heartbeat(ctx context.Context, node backplane.Node, ttl time.Duration) ([]backplane.Node, bool, error) {
	res, err := memberBeat.Run(ctx, m.rdb, []string{m.prefix + "nodes", m.prefix + "n:" + node.ID},
		m.prefix+"n:", node.ID, node.Data, max(1, ttl.Milliseconds())).Slice()
	if err != nil || len(res) == 0 {
		return nil, false, fmt.Errorf("memberset heartbeat: %v", err)
	}
	created, _ := res[0].(int64)
	return decode(res[1:]), created == 1, nil
}

func (m *memberSet) Nodes(ctx context.Context) ([]backplane.Node, error) {
	res, err := memberNodes.Run(ctx, m.rdb, []string{m.prefix + "nodes"}, m.prefix+"n:").Slice()
	if err != nil {
		return nil, fmt.Errorf("memberset nodes: %w", err)
	}
	return decode(res), nil
}

func (m *memberSet) Leave(ctx context.Context, id string) error {
	_, err := m.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, m.prefix+"n:"+id)
		p.SRem(ctx, m.prefix+"nodes", id)
		return nil
	})
	return err
}

func decode(res []any) []backplane.Node {
	out := make([]backplane.Node, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		id, _ := res[i].(string)
		data, _ := res[i+1].(string)
		out = append(out, backplane.Node{ID: id, Data: []byte(data)})
	}
	return out
}
