package matchmaking

import "time"

// SetRatingsTimeout sets the bound on a call of Config.Ratings until the
// returned function restores it. Tests that use it do not run in parallel.
func SetRatingsTimeout(d time.Duration) (restore func()) {
	old := ratingsTimeout
	ratingsTimeout = d
	return func() { ratingsTimeout = old }
}
