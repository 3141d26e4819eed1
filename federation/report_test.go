package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// TestReportCarriesProperties: a node's room reports are full snapshots
// under home's room id, with the members and the properties the game set
// on the room; a change of a property is reported, and a burst of changes
// ends with the latest at home.
func TestReportCarriesProperties(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t)
	a := startNodeAgent(t, e, nil)
	testrun.WaitFor(t, "the agent announced", func() bool { return a.count() > 0 })
	tc, err := NewTokenChecker(TokenCheckerConfig{Secret: tokenSecret})
	if err != nil {
		t.Fatal(err)
	}
	rep := NewRoomReporter(a.Node, quiet())
	testrun.GoRun(t, rep.Run)
	h, base := homeRoomHost(t, tc, rep)
	ctx := context.Background()
	atHome := func(what string, ok func(RoomSnapshot) bool) {
		t.Helper()
		testrun.WaitFor(t, what, func() bool {
			r, err := e.home.Room(ctx, "home-42")
			return err == nil && ok(r)
		})
	}

	for _, p := range []string{"alice", "bob"} {
		tok, err := MintToken(tokenSecret, Token{PlayerID: p, RoomID: "home-42", Expires: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		c, welcome, err := playtest.Join(t, playtest.PlayURL(base, "ticket="+tok))
		if err != nil || welcome["type"] != "welcome" {
			t.Fatalf("%s: %v %v", p, welcome, err)
		}
		c.Next("room")
	}
	atHome("home's room id with both members", func(r RoomSnapshot) bool {
		return slices.Equal(r.Members, []string{"alice", "bob"}) && r.Properties["kind"] == KindHomeRoom
	})

	r, _ := h.Room("home-42")
	r.SetProperty("map", "dunes")
	atHome("the game's property", func(r RoomSnapshot) bool {
		return r.Properties["map"] == "dunes" && len(r.Members) == 2
	})
	for i := range 500 {
		r.SetProperty("score", fmt.Sprint(i))
	}
	atHome("the latest of a burst", func(r RoomSnapshot) bool {
		return r.Properties["score"] == "499" && r.Properties["map"] == "dunes"
	})

	r.End("over")
	testrun.WaitFor(t, "the room closed at home", func() bool {
		_, err := e.home.Room(ctx, "home-42")
		return errors.Is(err, ErrNotFound)
	})
}

// TestReportPropertiesHomeRefuses: properties home would refuse are left
// out of a report, never the room.
func TestReportPropertiesHomeRefuses(t *testing.T) {
	t.Parallel()
	props := map[string]string{"ok": "1", "bad": "a\x00b", "long": string(make([]byte, maxPropertyVal+1))}
	for i := range maxProperties + 10 {
		props[fmt.Sprintf("p%03d", i)] = "x"
	}
	rep := roomReport(roomStateFor("r1", props))
	if err := rep.validate(); err != nil || len(rep.Properties) != maxProperties || rep.Properties["ok"] != "1" {
		t.Fatalf("report %d properties, %v", len(rep.Properties), err)
	}
	if _, ok := rep.Properties["bad"]; ok {
		t.Fatal("a property with a control character was kept")
	}
}

func roomStateFor(id string, props map[string]string) room.RoomState {
	return room.RoomState{ID: id, Kind: "duel", Players: []string{"a"}, Properties: props}
}
