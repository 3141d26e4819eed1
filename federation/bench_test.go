package federation

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// BenchmarkRegions3000Rooms times the regions list of a register holding
// 3,000 open rooms of ~8 kB (three servers at their 1,000-room cap):
// "scan" is the list as it was computed before issue 16 item 4, reading
// and decoding every room report; "counts" is Regions as it is now,
// reading one count record per server. Run both in one process:
//
//	go test ./federation -run '^$' -bench Regions3000 -benchtime 20x
func BenchmarkRegions3000Rooms(b *testing.B) {
	backends := map[string]func(b *testing.B) backplane.Backplane{
		"memory": func(b *testing.B) backplane.Backplane {
			bp, err := memory.NewStore(memory.Config{}).Cluster("home")
			if err != nil {
				b.Fatal(err)
			}
			return bp
		},
		"redis": func(b *testing.B) backplane.Backplane {
			srv := testbin.StartRedis(b)
			bp, err := redis.Open(redis.Config{URL: srv.Addr, Cluster: "home", Timeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { bp.Close() })
			return bp
		},
	}
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			e := newEnvOn(b, HomeConfig{Limits: RateLimits{Rooms: -1, PerIP: -1}, RequestTimeout: time.Minute}, backends[name](b), newClock())
			fillRooms(b, e, 3, 1000)
			ctx := context.Background()
			e.home.Regions(ctx) // the first list sweeps once
			b.Run("scan", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := legacyRegions(ctx, e.home); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("counts", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.home.Regions(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// fillRooms enrols servers of one approved node, each reporting rooms
// open rooms of eight players and ~8 kB of properties.
func fillRooms(b *testing.B, e *env, servers, rooms int) {
	b.Helper()
	key := e.createNode("au-sydney", "AU", true)
	props := map[string]string{}
	for i := range 8 {
		props[fmt.Sprintf("p%d", i)] = strings.Repeat("x", 1000)
	}
	for s := range servers {
		sk := e.inRotation(key, map[string]string{ServiceGame: fmt.Sprintf("10.0.0.%d:1", s)})
		for r := range rooms {
			req := roomRequest{RoomReport: RoomReport{
				RoomID:     fmt.Sprintf("s%d-r%d", s, r),
				Members:    []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"},
				Properties: props,
			}, Seq: 1}
			if res := e.do("POST", PathRooms, sk, req); res.Status != http.StatusOK {
				b.Fatalf("report: %d %s", res.Status, res.Body)
			}
		}
	}
}

// legacyRegions is the regions list as it was computed before counts were
// kept: everything the list needs plus every room report, decoded and
// counted. It is the baseline of BenchmarkRegions3000Rooms.
func legacyRegions(ctx context.Context, h *Home) (RegionList, error) {
	s, err := h.load(ctx)
	if err != nil {
		return RegionList{}, err
	}
	rooms, err := all[RoomSnapshot](ctx, h, collRooms)
	if err != nil {
		return RegionList{}, err
	}
	now := h.now()
	list := RegionList{Home: maps.Clone(h.cfg.Services)}
	byNode := map[string]*Region{}
	for _, n := range s.nodes {
		if s.inRotation(h, n, now) {
			list.Regions = append(list.Regions, Region{Node: n.ID, Services: map[string][]string{}})
		}
	}
	for i := range list.Regions {
		byNode[list.Regions[i].Node] = &list.Regions[i]
	}
	for _, room := range rooms {
		if r := byNode[room.NodeID]; r != nil && !room.Closed {
			r.Rooms++
			r.Players += len(room.Members)
		}
	}
	return list, nil
}
