package backplane

import (
	"fmt"
	"strings"
)

// Backplane is the store shared by the servers of one cluster: the union of
// its roles, each a small interface that a consumer may ask for alone.
//
// Every method takes a context and must return when it is done; an
// implementation that talks to a remote store must let the context's
// deadline bound the whole call, including the socket read. Implementations
// are safe for concurrent use.
//
// Beyond these, a backplane may implement optional interfaces, found by
// type assertion: RecordSwapper. A decorator made with Wrap keeps them.
type Backplane interface {
	Registry
	Claims
	Handoffs
	Counters
	RecordStore

	// Close releases the backplane's resources. Calls made after Close
	// return ErrClosed. Close is safe to call more than once.
	Close() error
}

// ValidateName reports whether s may be used as a cluster name, node id,
// claim kind or collection: non-empty, at most 256 bytes, and free of the
// characters the stores use as separators and hash tags.
func ValidateName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("backplane: %s is empty", what)
	case len(s) > 256:
		return fmt.Errorf("backplane: %s is longer than 256 bytes", what)
	case strings.ContainsAny(s, "{}:\x00"):
		return fmt.Errorf("backplane: %s %q contains one of { } : or NUL", what, s)
	}
	return nil
}
