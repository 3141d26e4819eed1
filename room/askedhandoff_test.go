package room

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

// arrivals is a module that passes on the handoffs its server's arrivals
// bring.
type arrivals struct{ got chan Handoff }

func (a *arrivals) Attach(ModuleHost) error { return nil }

func (a *arrivals) Arrived(_ context.Context, _ *Client, ho Handoff) { a.got <- ho }

// A player a redirect sent to a server with a handoff (its lobby, its
// queue place), and that was served by another because that server had
// left, was draining or could not be reached, brings the handoff along:
// TestComposeScale lost a waiting lobby when both its members, moved to a
// server that had begun draining too, were served elsewhere without it.
// A server named in the URL that is no valid node id is not asked for.
func TestHandoffForTheServerAskedComesAlong(t *testing.T) {
	rec := &arrivals{got: make(chan Handoff, 2)}
	two := startTwoWith(t, func() Game[*csim, int, *cplayer] { return newCounter() }, Config{Secret: "shared"}, func(i int) []Module {
		if i == 0 {
			return []Module{rec}
		}
		return nil
	})
	a := two.hosts[0]
	ho, _ := json.Marshal(Handoff{Kind: "lobby", Data: json.RawMessage(`{"code":"ABCDE"}`)})
	if err := a.fleet.PutHandoff(t.Context(), "s7", "p1", ho); err != nil { // s7 has left the fleet
		t.Fatal(err)
	}
	c := playtest.DialPlayer(t, two.srvs[0].URL, a.Tickets(), "p1", "node=s7")
	c.Welcome("rejoin")
	if got := <-rec.got; got.Kind != "lobby" || string(got.Data) != `{"code":"ABCDE"}` {
		t.Fatalf("p1 arrived with %+v, want the lobby handoff written for s7", got)
	}

	if err := a.fleet.PutHandoff(t.Context(), "checkpoint of s1", "p2", ho); err != nil {
		t.Fatal(err)
	}
	c = playtest.DialPlayer(t, two.srvs[0].URL, a.Tickets(), "p2", "node=checkpoint%20of%20s1")
	c.Welcome("new")
	if got := <-rec.got; got.Kind != "" {
		t.Fatalf("p2, asking for %q, arrived with %+v, want nothing", "checkpoint of s1", got)
	}
}
