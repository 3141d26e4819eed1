package fleet

import "errors"

var (
	// ErrNotFound reports that a unit is unclaimed, or that its holder is
	// not a live server in this server's view.
	ErrNotFound = errors.New("fleet: not found")

	// ErrHeld reports that a unique unit is claimed by another live server.
	ErrHeld = errors.New("fleet: claimed by another server")

	// ErrConfig reports a configuration New cannot run with.
	ErrConfig = errors.New("fleet: invalid config")

	// ErrDuplicateID reports that another running server has this
	// server's node id: Run returns it and the server must not start.
	ErrDuplicateID = errors.New("fleet: node id in use by another server")

	// ErrRunning reports a second call of Run.
	ErrRunning = errors.New("fleet: Run was called twice")

	// ErrDetached reports a Connect or Publish refused because the last
	// heartbeat did not reach the backplane: this server's record may have
	// expired, and a claim of a server not live is taken back by the
	// others.
	ErrDetached = errors.New("fleet: the last heartbeat did not reach the backplane")
)
