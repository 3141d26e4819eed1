package hosttest

import (
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

// The heartbeat and Cooldown of the socket tests are short, so that the
// tests are quick; the module-level tests use the defaults. The backplane calls
// and the relay's dials get generous deadlines: the tests run with -race
// on shared machines, where a 25 ms backplane deadline is missed now and
// then (the server then serves alone for a heartbeat) and fifty players
// reconnecting at once through the relay can take more than its default
// second to be answered (the relay then serves them locally, without
// their handoff). Beside a CPU hog on both cores even 250 ms was missed:
// a player arriving from a drained server whose Arrive call ran out of
// time was served without its queue place. The call timeout must stay
// below the heartbeat, so both are a second or near it; the tests wait
// on conditions, and a longer heartbeat only makes StartServers wait a
// little longer for the servers to see each other.
const (
	// Cooldown is the move cooldown of StartServers' hosts unless
	// Sockets sets another.
	Cooldown = 200 * time.Millisecond

	heartbeat   = time.Second
	callTimeout = 900 * time.Millisecond
)

// Sockets configures StartServers.
type Sockets struct {
	// Servers is the number of servers.
	Servers int
	// MatchLen is the Game's MatchLen.
	MatchLen uint64
	// States is the Game's States: every pass sends the room's players
	// a state.
	States bool
	// Cooldown is the hosts' room.Config.MoveCooldown; default Cooldown.
	Cooldown time.Duration
	// Modules returns the modules to add to the host of server i; each
	// runs beside it.
	Modules func(i int) []room.Module
	// Migrate has the Game implement room.Migrator (Migrating): a drain
	// moves its rooms to the other servers.
	Migrate bool
}

// Server is one server of StartServers: a fleet server with a room host
// of Game serving /play behind the server's relay on loopback.
type Server struct {
	*fleettest.Server
	// Host is the server's room host.
	Host *room.Host[*Sim, int, string]
	// URL is the server's public URL.
	URL string
}

// StartServers runs o.Servers servers, with real WebSockets, on one
// fleet until the test ends, and waits until each sees all. Their
// warnings go to the test's log, shown when it fails.
func StartServers(tb testing.TB, o Sockets) []*Server {
	tb.Helper()
	if o.Cooldown == 0 {
		o.Cooldown = Cooldown
	}
	https := make([]*httptest.Server, o.Servers)
	for i := range https {
		https[i] = httptest.NewUnstartedServer(nil)
	}
	c := fleettest.Start(tb, o.Servers, func(i int, cfg *fleet.Config) {
		cfg.Heartbeat, cfg.CallTimeout = heartbeat, callTimeout
		cfg.InternalAddress = https[i].Listener.Addr().String()
		cfg.DrainTimeout = 20 * time.Second
	})
	var out []*Server
	logger := testrun.Logger(tb, slog.LevelWarn)
	for i, s := range c.Servers {
		var g room.Game[*Sim, int, string] = &Game{MatchLen: o.MatchLen, States: o.States}
		if o.Migrate {
			g = Migrating{g.(*Game)}
		}
		h, err := room.New(g, room.Config{Secret: "shared", MoveCooldown: o.Cooldown, Limits: room.Limits{Connects: 1 << 20, Open: math.MaxInt}}, logger.With("node_id", s.ID()))
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range modules(o, i) {
			if err := h.Use(m); err != nil {
				tb.Fatal(err)
			}
		}
		h.UseServer(s.Fleet)
		h.UseFleet(s.Fleet)
		rl, err := relay.New(relay.Config{NodeID: s.ID(), Secret: "shared relay secret, long enough", DialTimeout: 10 * time.Second}, s.Fleet, logger)
		if err != nil {
			tb.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/play", h.Handler())
		mux.Handle(room.PathMove, h.MoveHandler())
		https[i].Config.Handler = rl.Middleware(mux)
		testrun.GoRun(tb, h.Run) // stopped after the server and the relay
		<-h.Started()            // before, /play answers 503
		https[i].Start()
		tb.Cleanup(func() {
			https[i].Close()
			rl.Close()
		})
		out = append(out, &Server{Server: s, Host: h, URL: https[i].URL})
	}
	testrun.WaitFor(tb, "servers see each other", func() bool {
		for _, s := range out {
			if len(s.Nodes()) != o.Servers {
				return false
			}
		}
		return true
	})
	return out
}

// Connect connects player id to s as a new player; the player reconnects
// through s when redirected.
func (s *Server) Connect(tb testing.TB, id string) *playtest.Player {
	tb.Helper()
	return playtest.Connect(tb, s.URL, s.URL, s.Host.Tickets(), id)
}

// ConnectVia is Connect for a player that reconnects through lb, the
// public URL of a load balancer (or of another server).
func (s *Server) ConnectVia(tb testing.TB, lb, id string) *playtest.Player {
	tb.Helper()
	return playtest.Connect(tb, s.URL, lb, s.Host.Tickets(), id)
}

// modules returns o.Modules(i), or none without Modules.
func modules(o Sockets, i int) []room.Module {
	if o.Modules == nil {
		return nil
	}
	return o.Modules(i)
}
