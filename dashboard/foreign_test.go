package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// Two servers with different security keys on one backplane: the feed of
// each lists the other as foreign, which the page shows as a split
// (#39.7).
func TestFeedListsForeignServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		a := c.Add(fleet.Config{NodeID: "a", InternalAddress: "127.0.0.1:9001", Key: []byte("the first key, 16+")}).Fleet
		b := c.Add(fleet.Config{NodeID: "b", InternalAddress: "127.0.0.1:9002", Key: []byte("the second key, 16+")}).Fleet
		feed := func(f *fleet.Fleet) (nodes, foreign string) {
			rec := httptest.NewRecorder()
			dashboard.Handler(f).ServeHTTP(rec, httptest.NewRequest("GET", dashboard.PathNodes, nil))
			var snap struct {
				Nodes []struct {
					ID string `json:"id"`
				} `json:"nodes"`
				Foreign []string `json:"foreign"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &snap); err != nil {
				t.Fatalf("feed %q: %v", rec.Body, err)
			}
			var ids []string
			for _, n := range snap.Nodes {
				ids = append(ids, n.ID)
			}
			return fmt.Sprint(ids), fmt.Sprint(snap.Foreign)
		}
		for i := 0; i < 10; i++ {
			if _, fa := feed(a); fa == "[b]" {
				if _, fb := feed(b); fb == "[a]" {
					break
				}
			}
			time.Sleep(fleettest.Heartbeat)
			synctest.Wait()
		}
		for _, tc := range []struct {
			f              *fleet.Fleet
			nodes, foreign string
		}{{a, "[a]", "[b]"}, {b, "[b]", "[a]"}} {
			if nodes, foreign := feed(tc.f); nodes != tc.nodes || foreign != tc.foreign {
				t.Errorf("%s's feed: nodes %s, foreign %s; want nodes %s, foreign %s", tc.f.ID(), nodes, foreign, tc.nodes, tc.foreign)
			}
		}
	})
}
