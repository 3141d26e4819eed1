package backplane

import "context"

// RecordSwapper is implemented by a backplane that can change several
// durable records at once, only if each still holds what the caller read:
// a compare-and-set over records, so that writers on different processes
// (several federation homes on one Redis) never lose each other's updates.
// It is optional: a caller finds it by type assertion. The memory and Redis
// backplanes implement it, and a backplane made by Wrap when the one it
// wraps does.
type RecordSwapper interface {
	// SwapRecords checks every swap's Old against the record it names and,
	// only if all match, applies every New, atomically: no other write to
	// those records comes between the check and the writes. It reports
	// whether the writes were made; false, with a nil error, means some
	// record had changed and nothing was written (read again and retry).
	SwapRecords(ctx context.Context, swaps ...RecordSwap) (bool, error)
}

// RecordSwap is one record of a SwapRecords call.
type RecordSwap struct {
	// Collection and ID name the record (as for PutRecord).
	Collection, ID string
	// Old is what the record must hold; nil means it must be absent.
	Old []byte
	// New is what the record is set to; nil deletes it. Ignored when
	// Check is set.
	New []byte
	// Check makes this swap a condition only: Old is compared and the
	// record is left as it is.
	Check bool
}
