package muster

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

const key16 = "0123456789abcdef"

// loadConfig is LoadConfig for a test: file ("" for none) and environ
// over DefaultConfig, checked by CheckConfig, so that an error names where
// its value came from.
func loadConfig(file string, environ []string) (config.Config, error) {
	if file == "" {
		return config.Load("", environ, DefaultConfig(), CheckConfig)
	}
	return config.Parse([]byte(file), environ, DefaultConfig(), CheckConfig)
}

// TestDefaultConfigIsThePackages: each section of DefaultConfig, translated
// for its package, is that package's DefaultConfig: the defaults are the
// packages' own, written once.
func TestDefaultConfigIsThePackages(t *testing.T) {
	t.Parallel()
	def := DefaultConfig()
	if got, want := roomConfig(def), room.DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("room: %+v, want %+v", got, want)
	}
	if got, pls := matchmakingConfig(def); !reflect.DeepEqual(got, matchmaking.DefaultConfig()) || pls != nil {
		t.Errorf("matchmaking: %+v and playlists %+v, want %+v and none", got, pls, matchmaking.DefaultConfig())
	}
	if got, want := lobbyConfig(def), lobby.DefaultConfig(); got != want {
		t.Errorf("lobby: %+v, want %+v", got, want)
	}
	got, want := fleetConfig(def, "", ""), fleet.DefaultConfig()
	// Not defaults of the fleet's but the server's own: internal-address
	// "" is the machine's address and the HTTP port, and the records'
	// key is the security key ("" signs nothing).
	if got.InternalAddress != ":8080" || len(got.Key) != 0 {
		t.Errorf("fleet: internal address %q and key %q, want :8080 and none", got.InternalAddress, got.Key)
	}
	got.InternalAddress, got.Key = "", nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fleet: %+v, want %+v", got, want)
	}
	if got := redisConfig(def).Timeout; got != redis.DefaultTimeout {
		t.Errorf("redis timeout %v, want %v", got, redis.DefaultTimeout)
	}
	if got := def.Federation; got.HomeURL != "" || time.Duration(got.AnnounceEvery) != federation.DefaultAnnounceEvery {
		t.Errorf("federation %+v: want it off, announcing every %v", got, federation.DefaultAnnounceEvery)
	}
}

const sectionsFile = `muster:
  room:
    rate: 30
    workers: 2
    read-limit: 4096
    ticket-ttl: 1m
    move-cooldown: 1.5
    limits:
      store: backplane
      connects: 60
  matchmaking:
    tick: 50ms
    hold: 4
    playlists:
      - name: duel
      - {name: squad, teams: 2, team-size: 4, rating: {window: 100, widen: 10.5, max: 400, default: 1000}}
  lobby:
    code-length: 6
    max-members: 4
    room-kind: party
  security:
    key: 0123456789abcdef
`

// TestSections: muster.room, muster.matchmaking (with its playlists) and
// muster.lobby reach the packages' Configs, the environment over the file.
func TestSections(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(sectionsFile, []string{
		"MUSTER__MATCHMAKING__PLAYLISTS__1__TEAM_SIZE=3",
		"MUSTER__MATCHMAKING__PLAYLISTS__2__NAME=ffa",
		"MUSTER__MATCHMAKING__PLAYLISTS__2__TEAMS=8",
		"MUSTER__ROOM__LIMITS__LOCKOUT=10m",
	})
	if err != nil {
		t.Fatal(err)
	}
	def := roomConfig(DefaultConfig())
	wantRoom := room.Config{
		Rate: 30, Workers: 2, MaxCatchUp: 4, ReadLimit: 4096, SendQueue: 32,
		PingInterval: 10 * time.Second, HelloTimeout: 10 * time.Second, Secret: "0123456789abcdef",
		TicketTTL: time.Minute, MoveCooldown: 1500 * time.Millisecond, AwayTimeout: time.Minute, DrainGrace: 2 * time.Second,
		Limits:  room.Limits{Store: room.StoreBackplane, Connects: 60, Window: def.Limits.Window, Open: 64, Failures: 20, Lockout: 10 * time.Minute, Messages: 120, Burst: 240},
		Migrate: def.Migrate,
	}
	if got := roomConfig(c); !reflect.DeepEqual(got, wantRoom) {
		t.Errorf("roomConfig =\n%+v\nwant\n%+v", got, wantRoom)
	}
	mc, pls := matchmakingConfig(c)
	wantPls := []matchmaking.Playlist{
		{Name: "duel"},
		{Name: "squad", Teams: 2, TeamSize: 3, Rating: matchmaking.RatingRule{Window: 100, Widen: 10.5, Max: 400, Default: 1000}},
		{Name: "ffa", Teams: 8},
	}
	if mc.Tick != 50*time.Millisecond || mc.Hold != 4*time.Second || mc.Ratings != nil || !reflect.DeepEqual(pls, wantPls) {
		t.Errorf("matchmakingConfig = %+v, %+v", mc, pls)
	}
	if got, want := lobbyConfig(c), (lobby.Config{CodeLength: 6, MaxMembers: 4, RoomKind: "party", Tick: 250 * time.Millisecond, ArrivalTimeout: 30 * time.Second, CodeFailures: 20, CodeLockout: 10 * time.Minute}); got != want {
		t.Errorf("lobbyConfig = %+v, want %+v", got, want)
	}
	// The packages take them as they are.
	m, err := matchmaking.New(mc, pls...)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Playlists(); got[0].Teams != 2 || got[0].TeamSize != 1 {
		t.Errorf("duel with the package's defaults = %+v", got[0])
	}
	if _, err := lobby.New(lobbyConfig(c)); err != nil {
		t.Fatal(err)
	}
}

// agrees checks, for each environment over DefaultConfig, that CheckConfig
// accepts it exactly when start (what a server builds from it) does: a
// setting start refuses, CheckConfig refuses first, so that muster config
// check and start-up agree.
func agrees(t *testing.T, start func(config.Config) error, environs ...[]string) {
	t.Helper()
	for _, env := range environs {
		c := DefaultConfig()
		if err := config.ApplyEnv(&c, env); err != nil {
			t.Fatal(err)
		}
		if checked, started := CheckConfig(c), start(c); (checked == nil) != (started == nil) {
			t.Errorf("%q: CheckConfig = %v but start-up = %v", env, checked, started)
		}
	}
}

// TestSectionsAgreeWithPackages: a section CheckConfig accepts, the
// package accepts; one the package refuses, CheckConfig refuses first.
func TestSectionsAgreeWithPackages(t *testing.T) {
	t.Parallel()
	agrees(t, func(c config.Config) error {
		mc, pls := matchmakingConfig(c)
		_, merr := matchmaking.New(mc, pls...)
		_, lerr := lobby.New(lobbyConfig(c))
		return errors.Join(merr, lerr)
	},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=duel"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=" + strings.Repeat("d", 65)},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=a b"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAMS=-1"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAMS=1000"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAMS=1001"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__1__NAME=d"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAMS=4294967296", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAM_SIZE=4294967296"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__RATING__DEFAULT=-3"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__HOLD=-1"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__CODE_LENGTH=4", "MUSTER__LOBBY__MAX_MEMBERS=1"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__CODE_LENGTH=3"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__MAX_MEMBERS=-2"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__MAX_MEMBERS=1000", "MUSTER__LOBBY__CODE_LOCKOUT=24h", "MUSTER__MATCHMAKING__HOLD=1h"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__ARRIVAL_TIMEOUT=-1"},
		[]string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__MAX_MEMBERS=1001"},
	)
}

// TestRoomAgreesWithHost: muster.room values that CheckConfig accepts,
// room.New accepts, and the ones it refuses, CheckConfig refuses.
func TestRoomAgreesWithHost(t *testing.T) {
	t.Parallel()
	agrees(t, func(c config.Config) error {
		_, err := room.New(&hosttest.Game{}, roomConfig(c), nil)
		return err
	},
		nil,
		[]string{"MUSTER__ROOM__RATE=1000", "MUSTER__ROOM__WORKERS=1", "MUSTER__ROOM__READ_LIMIT=1"},
		[]string{"MUSTER__ROOM__RATE=1001"},
		[]string{"MUSTER__ROOM__RATE=-1"},
		[]string{"MUSTER__ROOM__WORKERS=-1"},
		[]string{"MUSTER__ROOM__MAX_CATCH_UP=-1"},
		[]string{"MUSTER__ROOM__SEND_QUEUE=-1"},
		[]string{"MUSTER__ROOM__WORKERS=1024", "MUSTER__ROOM__SEND_QUEUE=65536"},
		[]string{"MUSTER__ROOM__MAX_CATCH_UP=1000", "MUSTER__ROOM__READ_LIMIT=1048576", "MUSTER__ROOM__TICKET_TTL=1h", "MUSTER__ROOM__AWAY_TIMEOUT=24h"},
		[]string{"MUSTER__ROOM__MAX_CATCH_UP=1001"},
		[]string{"MUSTER__ROOM__READ_LIMIT=1048577"},
		[]string{"MUSTER__ROOM__READ_LIMIT=9223372036854775807"},
		[]string{"MUSTER__ROOM__TICKET_TTL=61m"},
		[]string{"MUSTER__ROOM__TICKET_TTL=2562047h47m"},
		[]string{"MUSTER__ROOM__MOVE_COOLDOWN=61m"},
		[]string{"MUSTER__ROOM__PING_INTERVAL=6m"},
		[]string{"MUSTER__ROOM__HELLO_TIMEOUT=6m"},
		[]string{"MUSTER__ROOM__DRAIN_GRACE=6m"},
		[]string{"MUSTER__ROOM__AWAY_TIMEOUT=25h"},
		[]string{"MUSTER__ROOM__LIMITS__WINDOW=24h", "MUSTER__ROOM__LIMITS__LOCKOUT=24h"},
		[]string{"MUSTER__ROOM__LIMITS__WINDOW=25h"},
		[]string{"MUSTER__ROOM__LIMITS__LOCKOUT=25h"},
		[]string{"MUSTER__ROOM__WORKERS=1025"},
		[]string{"MUSTER__ROOM__WORKERS=99999999999"},
		[]string{"MUSTER__ROOM__SEND_QUEUE=65537"},
		[]string{"MUSTER__ROOM__MOVE_COOLDOWN=-1"},
		[]string{"MUSTER__ROOM__PING_INTERVAL=1ms", "MUSTER__ROOM__TICKET_TTL=1ms"},
		[]string{"MUSTER__ROOM__LIMITS__STORE=backplane"},
		[]string{"MUSTER__ROOM__LIMITS__STORE=Memory"},
		[]string{"MUSTER__ROOM__LIMITS__CONNECTS=-1"},
		[]string{"MUSTER__ROOM__LIMITS__OPEN=-1"},
		[]string{"MUSTER__ROOM__LIMITS__OPEN=0"},
		[]string{"MUSTER__ROOM__LIMITS__OPEN=1"},
		[]string{"MUSTER__ROOM__LIMITS__LOCKOUT=-1"},
	)
}

// TestCheckConfigAgreesWithStartup: what CheckConfig accepts, the fleet
// and the relay a server wires accept too, and what they refuse,
// CheckConfig refuses first, so that muster config check and start-up
// agree.
func TestCheckConfigAgreesWithStartup(t *testing.T) {
	t.Parallel()
	agrees(t, startup,
		nil,
		[]string{"MUSTER__SECURITY__KEY=" + key16},
		[]string{"MUSTER__SECURITY__KEY=short"},
		[]string{"MUSTER__SERVER__FLEET__SECRET=short"},
		[]string{"MUSTER__SERVER__FLEET__SECRET=" + key16},
		[]string{"MUSTER__SERVER__FLEET__HEARTBEAT=0.1", "MUSTER__SERVER__FLEET__NODE_PARAM=n-1._~"},
		[]string{"MUSTER__SERVER__FLEET__NODE_ID=" + strings.Repeat("n", 256)},
		[]string{"MUSTER__SERVER__FLEET__INTERNAL_ADDRESS={ip}:1", "MUSTER__SERVER__CAPACITY__MAX_LOAD=1"},
		[]string{"MUSTER__SERVER__FLEET__INTERNAL_ADDRESS=[::1]:65535", "MUSTER__SERVER__DRAIN__TIMEOUT=1ns"},
	)
}

// startup builds the fleet and relay a server builds from c, and closes
// them.
func startup(c config.Config) error {
	logger := slog.New(slog.DiscardHandler)
	id := nodeID(c)
	bp, err := memory.NewStore(memory.Config{}).Cluster(c.Server.Fleet.Cluster)
	if err != nil {
		return err
	}
	defer bp.Close()
	fl, err := fleet.New(fleetConfig(c, id, "10.0.0.1"), bp, logger)
	if err != nil {
		return err
	}
	rl, err := relay.New(relayConfig(c, id), fl, logger)
	if err != nil {
		return err
	}
	return rl.Close()
}

// TestLoadStep: the published load's step is a key, passed to the fleet.
func TestLoadStep(t *testing.T) {
	t.Parallel()
	c, err := loadConfig("", []string{"MUSTER__SERVER__CAPACITY__LOAD_STEP=-1"})
	if err != nil {
		t.Fatal(err)
	}
	if f := fleetConfig(c, "n1", "10.0.0.1"); f.LoadStep != -1 {
		t.Errorf("fleetConfig.LoadStep = %d, want -1", f.LoadStep)
	}
}

func TestWiring(t *testing.T) {
	c := DefaultConfig()
	c.Server.Fleet.InternalAddress = "{ip}:8000"
	c.Server.Fleet.PublicAddress = "https://{node-id}.example.test"
	c.Security.Key = "a key that is long enough"
	id := nodeID(c)
	if id == "" || id == nodeID(c) {
		t.Fatalf("generated node ids %q and %q: want fresh ones", id, nodeID(c))
	}
	f := fleetConfig(c, "n1", "10.1.2.3")
	if f.InternalAddress != "10.1.2.3:8000" || f.PublicAddress != "https://n1.example.test" ||
		f.MaxLoad != 200 || f.Heartbeat != 2*time.Second || f.DrainTimeout != 30*time.Second {
		t.Fatalf("fleetConfig = %+v", f)
	}
	if r := relayConfig(c, "n1"); r.Secret != c.Security.Key || r.NodeParam != "node" {
		t.Fatalf("relayConfig = %+v", r)
	}
	bp, err := openBackplane(c)
	if err != nil {
		t.Fatal(err)
	}
	bp.Close()
}
