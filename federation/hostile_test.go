package federation

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
)

// countingBackplane counts Records calls per collection.
type countingBackplane struct {
	backplane.Backplane
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingBackplane) Records(ctx context.Context, coll string) (map[string][]byte, error) {
	c.mu.Lock()
	c.reads[coll]++
	c.mu.Unlock()
	return c.Backplane.Records(ctx, coll)
}

func (c *countingBackplane) roomReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[collRooms]
}

// TestHostileRoomReports (issue 16 item 4): room reports from servers of an
// unapproved node are refused, a server may hold at most
// MaxRoomsPerServer open rooms and send at most MaxReportBytes a report,
// each refusal a clear 4xx, and the regions list reads counts kept as the
// reports arrive, never the reports themselves.
func TestHostileRoomReports(t *testing.T) {
	t.Parallel()
	c := newClock()
	mem, err := memory.NewStore(memory.Config{Now: c.Now}).Cluster("home")
	if err != nil {
		t.Fatal(err)
	}
	bp := &countingBackplane{Backplane: mem, reads: map[string]int{}}
	e := newEnvOn(t, HomeConfig{}, bp, c)

	_, unapproved := e.join(e.createNode("xx-flood", "AU", false))
	e.announce(unapproved, nil)
	res := e.do("POST", PathRooms, unapproved, report("flood-1", 1, "a"))
	if res.Status != http.StatusForbidden || res.code(t) != "not_approved" {
		t.Fatalf("report from an unapproved node: %d %s", res.Status, res.Body)
	}
	if e.room("flood-1") != nil {
		t.Fatal("an unapproved node's room was stored")
	}

	_, sk := e.sydney()
	e.announce(sk, nil)
	// A report of ~25 kB (the attack's size) is over the 16 KiB default.
	big := report("big", 1, "a")
	big.Properties = map[string]string{}
	for i := range 25 {
		big.Properties[fmt.Sprintf("k%02d", i)] = strings.Repeat("x", 1000)
	}
	res = e.do("POST", PathRooms, sk, big)
	if res.Status != http.StatusRequestEntityTooLarge || !strings.Contains(string(res.Body), "max-report-bytes") {
		t.Fatalf("25 kB report: %d %s", res.Status, res.Body)
	}
	// At most 1000 open rooms per server by default.
	for i := range 1000 {
		if res := e.do("POST", PathRooms, sk, report(fmt.Sprintf("r%d", i), 1, "a", "b")); res.Status != http.StatusOK {
			t.Fatalf("room %d: %d %s", i, res.Status, res.Body)
		}
	}
	res = e.do("POST", PathRooms, sk, report("one-more", 1, "a"))
	if res.Status != http.StatusConflict || res.code(t) != "too_many_rooms" || !strings.Contains(string(res.Body), "max-rooms-per-server") {
		t.Fatalf("room 1001: %d %s", res.Status, res.Body)
	}
	// A room at the cap still updates; one closing frees a place.
	if res := e.do("POST", PathRooms, sk, report("r0", 2, "a")); res.Status != http.StatusOK {
		t.Fatalf("update at the cap: %d %s", res.Status, res.Body)
	}
	if res := e.do("POST", PathRooms, sk, roomRequest{RoomReport: RoomReport{RoomID: "r1", Closed: true}, Seq: 2}); res.Status != http.StatusOK {
		t.Fatalf("close at the cap: %d %s", res.Status, res.Body)
	}
	if res := e.do("POST", PathRooms, sk, report("one-more", 1, "a")); res.Status != http.StatusOK {
		t.Fatalf("a new room after one closed: %d %s", res.Status, res.Body)
	}

	// The regions list counts them without reading them.
	e.regions() // the first list also sweeps every report once
	before := bp.roomReads()
	list := e.regions()
	if got := bp.roomReads() - before; got != 0 {
		t.Fatalf("the regions list read every room report %d times", got)
	}
	var au Region
	for _, r := range list.Regions {
		if r.Node == "au-sydney" {
			au = r
		}
	}
	// 1000 rooms of two, r0 now of one, r1 closed, one-more of one.
	if au.Rooms != 1000 || au.Players != 998*2+1+1 {
		t.Fatalf("counts %+v", au)
	}
}
