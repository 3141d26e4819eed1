package room

import (
	"regexp"
	"testing"
)

// The ids a host makes are unique across hosts, so that a game can key a
// saved result by one: two servers, or one server before and after a
// restart, each opening their first room, do not both call it "r1". An id
// the game gives is kept as given.
func TestRoomIDsUniqueAcrossHosts(t *testing.T) {
	valid := regexp.MustCompile(`^r[0-9]+-[a-z2-7]{10}$`)
	seen := map[string]bool{}
	for range 2 {
		h, _ := startHost(t, Config{})
		for _, p := range []string{"a", "b"} {
			r, err := h.OpenRoom(t.Context(), Info{Players: []string{p}})
			if err != nil {
				t.Fatal(err)
			}
			id := r.ID()
			if !valid.MatchString(id) {
				t.Errorf("room id %q, want r<n>-<10 characters of base32>", id)
			}
			if seen[id] {
				t.Errorf("room id %q made twice", id)
			}
			seen[id] = true
		}
		r, err := h.OpenRoom(t.Context(), Info{ID: "mine", Players: []string{"c"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.ID() != "mine" {
			t.Errorf("room opened as %q has id %q", "mine", r.ID())
		}
	}
}
