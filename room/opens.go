package room

// HoldOpen counts one more connection from the client at ip (an IP
// address, without a port) as open on this server, against Limits.Open,
// and reports whether it may be: false, counting nothing, when the
// client's address holds Limits.Open connections here already. The host
// holds every connection it serves so; the server's relay holds every
// connection it relays through the server to another (relay.OpenLimit),
// so that one address holds at most Limits.Open sockets on a server,
// played or relayed. Each true answer is let go of with ReleaseOpen.
func (h *Host[Sim, Input, Player]) HoldOpen(ip string) bool { return h.limits.hold(ip) }

// ReleaseOpen lets go of a connection HoldOpen counted.
func (h *Host[Sim, Input, Player]) ReleaseOpen(ip string) { h.limits.release(ip) }
