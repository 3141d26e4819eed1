// Package addrkey gives the key under which the per-address limits count
// a client: the connect rate limit and the bad-ticket lockout of room, and
// the wrong-code lockout of lobby.
package addrkey

import "net/netip"

// Prefix6 is the length of the IPv6 prefix that counts as one address:
// a /64, the smallest network an ISP hands a customer, in which one
// stranger holds 2^64 addresses.
const Prefix6 = 64

// Of returns the key under which the per-address limits count the client
// address ip (as net.SplitHostPort leaves it, without brackets or port):
// an IPv4 address, or an IPv4-mapped IPv6 address, is counted whole, as
// the IPv4 address; any other IPv6 address by its /64 prefix, written as
// "2001:db8:1:2::/64", with its zone dropped. Anything that is not an IP
// address is returned as it is.
func Of(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(Prefix6)
	if err != nil {
		return ip // not reached: a zoneless IPv6 address has a /64
	}
	return p.String()
}
