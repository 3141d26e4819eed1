package backplane

import "errors"

var (
	// ErrNotFound reports that a claim, handoff or record does not exist, or
	// that a claim's owner is no longer a live node.
	ErrNotFound = errors.New("backplane: not found")

	// ErrUnsupported is returned by a backplane that does not implement an
	// optional operation (Increment). Callers fall back to per-server memory.
	ErrUnsupported = errors.New("backplane: operation not supported")

	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("backplane: closed")

	// ErrEmptyID is returned for a claim with an empty id.
	ErrEmptyID = errors.New("backplane: empty id")
)
