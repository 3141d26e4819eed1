package federation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

type failingCounter struct{}

func (failingCounter) Increment(context.Context, string, time.Duration, int64) (int64, error) {
	return 0, errors.New("store unreachable")
}

func TestTokenChecker(t *testing.T) {
	t.Parallel()
	c := newClock()
	tc, err := NewTokenChecker(TokenCheckerConfig{Secret: tokenSecret, NodeID: "au-sydney", Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mint := func(tok Token) string {
		t.Helper()
		if tok.Expires.IsZero() {
			tok.Expires = c.Now().Add(time.Minute)
		}
		s, err := MintToken(tokenSecret, tok)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := mint(Token{PlayerID: "alice", RoomID: "r1", NodeID: "au-sydney"})
	if id, err := tc.CheckTicket(ctx, good); err != nil || id != "alice" {
		t.Fatalf("a home token: %q %v", id, err)
	}
	// Two tokens minted alike are two tokens.
	again := mint(Token{PlayerID: "alice", RoomID: "r1", NodeID: "au-sydney"})
	if id, err := tc.CheckTicket(ctx, again); err != nil || id != "alice" {
		t.Fatalf("a second token for the same room: %q %v", id, err)
	}
	forged, _ := MintToken([]byte("another-secret-0123456789"), Token{PlayerID: "alice", RoomID: "r1", Expires: c.Now().Add(time.Minute)})
	tests := []struct {
		name, ticket string
	}{
		{"reused", good},
		{"a room host's own ticket", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.c2lnbmF0dXJl"},
		{"empty", ""},
		{"garbage", "v1.!!!.???"},
		{"forged", forged},
		{"for another node", mint(Token{PlayerID: "bob", RoomID: "r1", NodeID: "jp-tokyo"})},
		{"expired", mint(Token{PlayerID: "bob", RoomID: "r1", Expires: c.Now()})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if id, err := tc.CheckTicket(ctx, tt.ticket); !errors.Is(err, room.ErrTicket) || id != "" {
				t.Fatalf("CheckTicket = %q, %v; want an error wrapping room.ErrTicket", id, err)
			}
		})
	}
	// A token with no node is good on any node.
	if id, err := tc.CheckTicket(ctx, mint(Token{PlayerID: "carol", RoomID: "r2"})); err != nil || id != "carol" {
		t.Fatalf("a token for any node: %q %v", id, err)
	}
	// A counter that cannot be reached is not a bad ticket (try again).
	down, _ := NewTokenChecker(TokenCheckerConfig{Secret: tokenSecret, Counter: failingCounter{}, Now: c.Now})
	if _, err := down.CheckTicket(ctx, mint(Token{PlayerID: "dan", RoomID: "r3"})); err == nil || errors.Is(err, room.ErrTicket) {
		t.Fatalf("with the counter down: %v", err)
	}
	if _, err := NewTokenChecker(TokenCheckerConfig{Secret: []byte("short")}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("short secret: %v", err)
	}
}

// TestRoomReporter: a room host's states reach home as full snapshots from
// the reporter's own goroutine; RoomChanged never blocks, even with Run
// not running.
func TestRoomReporter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newLiveEnv(t)
		a := startNodeAgent(t, e, nil)
		rep := NewRoomReporter(a.Node, quiet())
		// Before Run: noted, never blocking.
		for i := range 5000 {
			rep.RoomChanged(room.RoomState{ID: "r1", Kind: "duel", Players: []string{fmt.Sprint("p", i)}})
		}
		rep.RoomChanged(room.RoomState{ID: "r1", Kind: "duel", Players: []string{"alice", "bob"}})
		rep.RoomChanged(room.RoomState{ID: "r2", Kind: "lobby", Players: []string{"carol"}})
		synctest.Wait() // joined and announced
		run := testrun.Start(t, rep.Run)
		ctx := run.Context()
		time.Sleep(time.Second) // the reports are paced: ReportsPerSecond
		synctest.Wait()
		r1, err := e.home.Room(ctx, "r1")
		if err != nil || !slices.Equal(r1.Members, []string{"alice", "bob"}) || r1.Properties["kind"] != "duel" {
			t.Fatalf("r1 at home: %+v %v", r1, err)
		}
		if r2, err := e.home.Room(ctx, "r2"); err != nil || !slices.Equal(r2.Members, []string{"carol"}) {
			t.Fatalf("r2 at home: %+v %v", r2, err)
		}
		rep.RoomChanged(room.RoomState{ID: "r1", Kind: "duel", Players: []string{"alice", "bob"}, Ended: true})
		time.Sleep(time.Second)
		synctest.Wait()
		if _, err := e.home.Room(ctx, "r1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("ended room at home: %v", err)
		}
		if err := rep.Run(ctx); !errors.Is(err, ErrRunning) {
			t.Fatalf("second Run: %v", err)
		}
		run.End(t)
	})
}

// TestRoomReporterAfterOutage: a node cut off from home for longer than
// ReapAfter has its rooms ended at home; when its announces get through
// again, its open rooms are sent again.
func TestRoomReporterAfterOutage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newLiveEnv(t)
		var down atomic.Bool
		tr := handlerTransport{h: e.h, drop: func(*http.Request) bool { return down.Load() }}
		a := startNodeAgent(t, e, tr)
		rep := NewRoomReporter(a.Node, quiet())
		testrun.GoRun(t, rep.Run)
		ctx := t.Context()
		synctest.Wait()
		rep.RoomChanged(room.RoomState{ID: "r1", Kind: "duel", Players: []string{"alice", "bob"}})
		rep.RoomChanged(room.RoomState{ID: "r2", Kind: "duel", Players: []string{"carol"}})
		rep.RoomChanged(room.RoomState{ID: "r2", Kind: "duel", Ended: true})
		time.Sleep(time.Second) // the reports are paced: ReportsPerSecond
		synctest.Wait()
		if r, err := e.home.Room(ctx, "r1"); err != nil || len(r.Members) != 2 {
			t.Fatalf("r1 before the outage: %+v %v", r, err)
		}
		down.Store(true)
		time.Sleep(DefaultReapAfter + time.Minute)
		synctest.Wait()
		if _, err := e.home.Room(ctx, "r1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("r1 of a server cut off for longer than ReapAfter: %v", err)
		}
		e.regions() // as a placer's poll: the dead server's rooms end
		if raw, _ := e.bp.Record(ctx, collRooms, "r1"); raw != nil {
			t.Fatal("r1 is still in the register")
		}
		down.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		if r, err := e.home.Room(ctx, "r1"); err != nil || !slices.Equal(r.Members, []string{"alice", "bob"}) {
			t.Fatalf("r1 after the outage: %+v %v", r, err)
		}
		if _, err := e.home.Room(ctx, "r2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an ended room came back: %v", err)
		}
	})
}
