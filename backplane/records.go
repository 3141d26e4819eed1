package backplane

import "context"

// RecordStore is the role of a backplane that keeps durable records (no
// expiry) in named collections, for registers such as the federation's.
// RecordSwapper is its optional compare-and-set.
//
// (It is not named Records, after the concept, because a struct that
// embedded it would then have a field Records that hides the method.)
type RecordStore interface {
	// PutRecord stores a durable record (no expiry) under id in the named
	// collection, replacing an earlier one.
	PutRecord(ctx context.Context, collection, id string, data []byte) error

	// Record returns the record id of the collection, or ErrNotFound.
	Record(ctx context.Context, collection, id string) ([]byte, error)

	// DeleteRecord removes record id from the collection. Removing an
	// absent record is not an error.
	DeleteRecord(ctx context.Context, collection, id string) error

	// Records returns every record of the collection, keyed by id.
	Records(ctx context.Context, collection string) (map[string][]byte, error)
}
