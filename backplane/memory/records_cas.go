package memory

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/muster-gg/muster/backplane"
)

var _ backplane.RecordSwapper = (*Backplane)(nil)

// SwapRecords implements backplane.RecordSwapper: every swap is checked and
// applied under the store's lock.
func (b *Backplane) SwapRecords(ctx context.Context, swaps ...backplane.RecordSwap) (bool, error) {
	for _, s := range swaps {
		if err := backplane.ValidateName("collection", s.Collection); err != nil {
			return false, err
		}
	}
	var ok bool
	err := b.do(ctx, true, func(c *cluster, _ time.Time) error {
		for _, s := range swaps {
			cur, found := c.records[s.Collection][s.ID]
			if found != (s.Old != nil) || (found && !bytes.Equal(cur, s.Old)) {
				return nil
			}
		}
		for _, s := range swaps {
			if s.Check {
				continue
			}
			coll := c.records[s.Collection]
			if s.New == nil {
				delete(coll, s.ID)
				continue
			}
			if coll == nil {
				coll = make(map[string][]byte)
				c.records[s.Collection] = coll
			}
			coll[s.ID] = slices.Clone(s.New)
		}
		ok = true
		return nil
	})
	return ok, err
}
