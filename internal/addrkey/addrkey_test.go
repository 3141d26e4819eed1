package addrkey

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct{ ip, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"}, // IPv4-mapped: the IPv4 address
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"2001:DB8:1:2:0:0:0:9", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
		{"", ""},
		{"pipe", "pipe"},
		{"[2001:db8::1]:80", "[2001:db8::1]:80"}, // not an address: as it is
	} {
		if got := Of(c.ip); got != c.want {
			t.Errorf("Of(%q) = %q, want %q", c.ip, got, c.want)
		}
	}
}
