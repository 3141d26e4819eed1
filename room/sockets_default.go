//go:build !muster_portable

package room

// defaultSockets is Config.Sockets's default: the event loop.
const defaultSockets = SocketsLoop
