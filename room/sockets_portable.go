//go:build muster_portable

package room

// defaultSockets is Config.Sockets's default in a build with the
// muster_portable tag, with which the tests run on the portable path.
const defaultSockets = SocketsPortable
