package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
)

// A claim is the key c:<kind>:<id> holding its holder's node id. Whether
// the holder is live is read from the view's expiry index (v:exp, see
// view.go), a key every claim script declares, rather than from the
// holder's own key, whose name a script could only build from a value: a
// script touches no key it was not given in KEYS.

// claimLua reads Redis's clock and judges liveness by the expiry index.
// KEYS[1] is the index.
const claimLua = `
redis.replicate_commands() -- Redis < 5: allows writes after TIME
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function live(id)
  local at = redis.call('ZSCORE', KEYS[1], id)
  return at and tonumber(at) > now
end
`

var (
	// KEYS: index, claim. ARGV: owner.
	claimUniqueScript = goredis.NewScript(claimLua + `
local cur = redis.call('GET', KEYS[2])
if cur == ARGV[1] then return cur end
if cur and live(cur) then return cur end
redis.call('SET', KEYS[2], ARGV[1])
return ARGV[1]
`)

	// KEYS: owner's node key, claims... ARGV: owner. The claims' lease is
	// the record's remaining life; none without a record.
	claimScript = goredis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
for i = 2, #KEYS do
  if ttl > 0 then
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ttl)
  else
    redis.call('SET', KEYS[i], ARGV[1])
  end
end
return 0
`)

	// KEYS: index, claims... ARGV: owner, lease ms. Returns the positions
	// (from 1) of the claims another live node holds.
	reassertScript = goredis.NewScript(claimLua + `
local lost = {}
for i = 2, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  if cur and cur ~= ARGV[1] and live(cur) then
    lost[#lost + 1] = i - 1
  else
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  end
end
return lost
`)
)

func (b *Backplane) expIndexKey() string { return b.prefix + "v:exp" }

// Claim implements backplane.Backplane with one script call.
func (b *Backplane) Claim(ctx context.Context, owner string, keys ...backplane.Key) error {
	if err := backplane.ValidateClaim(owner, keys...); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	ks := make([]string, 1, len(keys)+1)
	ks[0] = b.nodeKey(owner)
	for _, k := range keys {
		ks = append(ks, b.claimKey(k))
	}
	if err := claimScript.Run(ctx, b.rdb, ks, owner).Err(); err != nil {
		return wrap("claim", err)
	}
	return nil
}

// ClaimUnique implements backplane.Backplane.
func (b *Backplane) ClaimUnique(ctx context.Context, owner string, key backplane.Key) (string, error) {
	if err := backplane.ValidateClaim(owner, key); err != nil {
		return "", err
	}
	holder, err := claimUniqueScript.Run(ctx, b.rdb, []string{b.expIndexKey(), b.claimKey(key)}, owner).Text()
	if err != nil {
		return "", wrap("claim unique", err)
	}
	return holder, nil
}

// Reassert implements backplane.Backplane with one script call.
func (b *Backplane) Reassert(ctx context.Context, owner string, lease time.Duration, keys ...backplane.Key) ([]backplane.Key, error) {
	if err := backplane.ValidateClaim(owner, keys...); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	ks := make([]string, 1, len(keys)+1)
	ks[0] = b.expIndexKey()
	for _, k := range keys {
		ks = append(ks, b.claimKey(k))
	}
	pos, err := reassertScript.Run(ctx, b.rdb, ks, owner, ttlMillis(lease)).Int64Slice()
	if err != nil {
		return nil, wrap("reassert", err)
	}
	var lost []backplane.Key
	for _, p := range pos {
		if p >= 1 && int(p) <= len(keys) {
			lost = append(lost, keys[p-1])
		}
	}
	return lost, nil
}
