//go:build !muster_portable

package fleetproc

// buildTags are the build tags the server binaries are built with: those
// of the tests that build them.
const buildTags = ""
