package fleet

import (
	"context"

	"github.com/muster-gg/muster/backplane"
)

// maxKeysPerCall bounds the keys of one backplane call that writes or
// re-asserts claims. Every call has the same deadline (CallTimeout), while
// its work grows with its keys: 20,000 claims in one call took up to two
// thirds of a 0.5 s deadline on a busy machine (a real redis-server, 50 to
// 330 ms), and more than all of it under the race detector; a heartbeat
// whose re-assertion gives up renews no lease, and the claims expire.
// Longer lists go maxKeysPerCall keys at a time, each call with its own
// deadline.
const maxKeysPerCall = 1000

// inChunks calls call with keys, at most maxKeysPerCall of them at a time
// and each time with a context bounded by CallTimeout, until one fails;
// it returns that call's error.
func (f *Fleet) inChunks(ctx context.Context, keys []backplane.Key, call func(context.Context, []backplane.Key) error) error {
	for len(keys) > 0 {
		n := min(len(keys), maxKeysPerCall)
		cctx, cancel := context.WithTimeout(ctx, f.cfg.CallTimeout)
		err := call(cctx, keys[:n])
		cancel()
		if err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}
