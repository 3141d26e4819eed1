package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
)

var _ backplane.RecordSwapper = (*Backplane)(nil)

// swapRecordsScript checks and then writes records in one script, so that
// Redis runs it atomically. KEYS are the collections' hashes (one per
// swap, all under the cluster's hash tag); ARGV holds four values per swap:
// the record id, the mode ("c" check, "s" set, "d" delete), whether a
// value is expected ("1") or the record must be absent ("0"), the expected
// value, and the new value.
var swapRecordsScript = goredis.NewScript(`
local n = #KEYS
for i = 1, n do
  local a = (i - 1) * 5
  local cur = redis.call('HGET', KEYS[i], ARGV[a + 1])
  if ARGV[a + 3] == '1' then
    if cur ~= ARGV[a + 4] then return 0 end
  elseif cur then
    return 0
  end
end
for i = 1, n do
  local a = (i - 1) * 5
  local mode = ARGV[a + 2]
  if mode == 's' then
    redis.call('HSET', KEYS[i], ARGV[a + 1], ARGV[a + 5])
  elseif mode == 'd' then
    redis.call('HDEL', KEYS[i], ARGV[a + 1])
  end
end
return 1
`)

// SwapRecords implements backplane.RecordSwapper with one Lua script.
func (b *Backplane) SwapRecords(ctx context.Context, swaps ...backplane.RecordSwap) (bool, error) {
	if len(swaps) == 0 {
		return true, nil
	}
	keys := make([]string, 0, len(swaps))
	args := make([]any, 0, 5*len(swaps))
	for _, s := range swaps {
		if err := backplane.ValidateName("collection", s.Collection); err != nil {
			return false, err
		}
		mode := "s"
		switch {
		case s.Check:
			mode = "c"
		case s.New == nil:
			mode = "d"
		}
		expect := "0"
		if s.Old != nil {
			expect = "1"
		}
		keys = append(keys, b.recordsKey(s.Collection))
		args = append(args, s.ID, mode, expect, s.Old, s.New)
	}
	n, err := swapRecordsScript.Run(ctx, b.rdb, keys, args...).Int64()
	if err != nil {
		return false, wrap("swap records", err)
	}
	return n == 1, nil
}
