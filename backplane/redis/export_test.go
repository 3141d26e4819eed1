package redis

import "time"

// SetTombstoneTTL shortens how long b's removals stay in the view's log.
func SetTombstoneTTL(b *Backplane, d time.Duration) { b.view.tombstones = d }
