//go:build muster_portable

package fleetproc

// buildTags are the build tags the server binaries are built with: those
// of the tests that build them, so that a run on the portable path
// (room.SocketsPortable by default) runs its servers on it too.
const buildTags = "muster_portable"
