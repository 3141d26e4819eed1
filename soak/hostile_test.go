package soak

import "testing"

func testHostile(t *testing.T, c *cluster, cr *crowd, inv *invariants, fig *figures) {
}
