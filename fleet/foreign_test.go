package fleet_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// getProbe returns the status and body f's handler answers to GET path.
func getProbe(f *fleet.Fleet, path string) (int, string) {
	w := httptest.NewRecorder()
	f.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Code, w.Body.String()
}

// foreignOf returns the "foreign" member of f's capacity report.
func foreignOf(t *testing.T, f *fleet.Fleet) string {
	t.Helper()
	_, body := getProbe(f, fleet.PathCapacity)
	var c struct {
		Foreign []string `json:"foreign"`
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("capacity %q: %v", body, err)
	}
	return fmt.Sprint(c.Foreign)
}

// A server with another security key splits the fleet; the split shows:
// each side lists the other's servers at PathCapacity and in its record,
// and the side outnumbered answers its readiness probe 503 naming the key
// and its environment variable (#39.7).
func TestForeignKeyShows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := []byte("the fleet's security key")
		c := fleettest.Start(t, 2, func(_ int, cfg *fleet.Config) { cfg.Key = key })
		odd := c.Add(fleet.Config{NodeID: "s2", Heartbeat: hb, InternalAddress: "127.0.0.1:9002", Key: []byte("some other key, 16+")}).Fleet
		time.Sleep(2 * hb)
		synctest.Wait()
		s0, s1 := c.Servers[0].Fleet, c.Servers[1].Fleet

		if got := foreignOf(t, s0); got != "[s2]" {
			t.Errorf("s0's capacity lists %s as foreign, want [s2]", got)
		}
		if got := foreignOf(t, odd); got != "[s0 s1]" {
			t.Errorf("s2's capacity lists %s as foreign, want [s0 s1]", got)
		}
		code, body := getProbe(odd, fleet.PathReady)
		if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "foreign-key: ") ||
			!strings.Contains(body, "muster.security.key") || !strings.Contains(body, "MUSTER__SECURITY__KEY") {
			t.Errorf("s2, outnumbered by servers of another key, answers ready %d %q; want 503 foreign-key naming the key", code, body)
		}
		if code, body := getProbe(s0, fleet.PathReady); code != http.StatusOK {
			t.Errorf("s0, with the key of most servers, answers ready %d %q; want 200", code, body)
		}
		// s0 publishes what it found with its next heartbeat, and s1
		// reads it with its own.
		seen := func() string {
			for _, n := range s1.Nodes() {
				if n.ID == "s0" {
					return fmt.Sprint(n.Foreign)
				}
			}
			return "no record of s0"
		}
		for i := 0; i < 5 && seen() != "[s2]"; i++ {
			time.Sleep(hb)
			synctest.Wait()
		}
		if got := seen(); got != "[s2]" {
			t.Errorf("s1 sees s0's record list %s as foreign, want [s2]", got)
		}
		if got := fmt.Sprint(odd.Foreign()); got != "[s0 s1]" {
			t.Errorf("s2.Foreign() = %s, want [s0 s1]", got)
		}

		// Cut off, its view of the others is old: it does not judge.
		c.Servers[2].Backplane.Cut(true)
		time.Sleep(2 * hb)
		synctest.Wait()
		if code, body := getProbe(odd, fleet.PathReady); strings.HasPrefix(body, "foreign-key") {
			t.Errorf("s2, cut off from the backplane, answers ready %d %q; want no foreign-key", code, body)
		}

		// Once the odd server is gone, the split is forgotten.
		c.Servers[2].Stop()
		time.Sleep(2 * hb)
		synctest.Wait()
		if got := s0.Foreign(); got != nil {
			t.Errorf("s0.Foreign() = %v after s2 left, want nil", got)
		}
	})
}

// One against one, neither side can tell which key is meant: both stay
// ready, and both list the other.
func TestForeignKeyTieStaysReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		a := c.Add(fleet.Config{NodeID: "a", Heartbeat: hb, InternalAddress: "127.0.0.1:9001", Key: []byte("the first key, 16+")}).Fleet
		b := c.Add(fleet.Config{NodeID: "b", Heartbeat: hb, InternalAddress: "127.0.0.1:9002", Key: []byte("the second key, 16+")}).Fleet
		time.Sleep(2 * hb)
		synctest.Wait()
		for _, f := range []*fleet.Fleet{a, b} {
			if code, body := getProbe(f, fleet.PathReady); code != http.StatusOK {
				t.Errorf("%s answers ready %d %q in a tie; want 200", f.ID(), code, body)
			}
		}
		if got := foreignOf(t, a); got != "[b]" {
			t.Errorf("a lists %s as foreign, want [b]", got)
		}
		if got := foreignOf(t, b); got != "[a]" {
			t.Errorf("b lists %s as foreign, want [a]", got)
		}
	})
}
