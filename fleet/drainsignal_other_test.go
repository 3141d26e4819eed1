//go:build !unix

package fleet_test

import "testing"

// A second signal during DrainOnSignal cuts the drain short
// (drainsignal_unix_test.go).
func TestSecondSignalCutsDrain(t *testing.T) {
	t.Skip("sends itself SIGUSR1, Unix only")
}
