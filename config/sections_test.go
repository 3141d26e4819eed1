package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/matchmaking"
	"github.com/muster-gg/muster/room"
)

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
	c, err := config.Parse([]byte(sectionsFile), []string{
		"MUSTER__MATCHMAKING__PLAYLISTS__1__TEAM_SIZE=3",
		"MUSTER__MATCHMAKING__PLAYLISTS__2__NAME=ffa",
		"MUSTER__MATCHMAKING__PLAYLISTS__2__TEAMS=8",
		"MUSTER__ROOM__LIMITS__LOCKOUT=10m",
	})
	if err != nil {
		t.Fatal(err)
	}
	def := config.Default().RoomConfig()
	wantRoom := room.Config{
		Rate: 30, Workers: 2, MaxCatchUp: 4, ReadLimit: 4096, SendQueue: 32,
		PingInterval: 10 * time.Second, HelloTimeout: 10 * time.Second, Secret: "0123456789abcdef",
		TicketTTL: time.Minute, MoveCooldown: 1500 * time.Millisecond, AwayTimeout: time.Minute, DrainGrace: 2 * time.Second,
		Limits: room.Limits{Store: room.StoreBackplane, Connects: 60, Window: def.Limits.Window, Open: 64, Failures: 20, Lockout: 10 * time.Minute, Messages: 120, Burst: 240},
	}
	if got := c.RoomConfig(); !reflect.DeepEqual(got, wantRoom) {
		t.Errorf("RoomConfig =\n%+v\nwant\n%+v", got, wantRoom)
	}
	mc, pls := c.MatchmakingConfig()
	wantPls := []matchmaking.Playlist{
		{Name: "duel"},
		{Name: "squad", Teams: 2, TeamSize: 3, Rating: matchmaking.RatingRule{Window: 100, Widen: 10.5, Max: 400, Default: 1000}},
		{Name: "ffa", Teams: 8},
	}
	if mc.Tick != 50*time.Millisecond || mc.Hold != 4*time.Second || mc.Ratings != nil || !reflect.DeepEqual(pls, wantPls) {
		t.Errorf("MatchmakingConfig = %+v, %+v", mc, pls)
	}
	if got, want := c.LobbyConfig(), (lobby.Config{CodeLength: 6, MaxMembers: 4, RoomKind: "party", Tick: 250 * time.Millisecond, ArrivalTimeout: 30 * time.Second, CodeFailures: 20, CodeLockout: 10 * time.Minute}); got != want {
		t.Errorf("LobbyConfig = %+v, want %+v", got, want)
	}
	// The packages take them as they are.
	m, err := matchmaking.New(mc, pls...)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Playlists(); got[0].Teams != 2 || got[0].TeamSize != 1 {
		t.Errorf("duel with the package's defaults = %+v", got[0])
	}
	if _, err := lobby.New(c.LobbyConfig()); err != nil {
		t.Fatal(err)
	}
}

// TestBadSections: each section's bad values, named by key and variable.
func TestBadSections(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, file string
		environ    []string
		want       string
		err        error
	}{
		{name: "rate", file: "muster:\n  room:\n    rate: 0\n",
			want: "config: muster.room.rate / MUSTER__ROOM__RATE: want steps per second, 1-1000, got 0 (line 3)", err: config.ErrInvalid},
		{name: "open", file: "muster:\n  room:\n    limits:\n      open: -1\n",
			want: "config: muster.room.limits.open / MUSTER__ROOM__LIMITS__OPEN: want at least 0, got -1 (line 4)", err: config.ErrInvalid},
		{name: "store", environ: []string{"MUSTER__ROOM__LIMITS__STORE=redis"},
			want: `config: muster.room.limits.store / MUSTER__ROOM__LIMITS__STORE: want memory or backplane, got "redis" (from the environment)`, err: config.ErrInvalid},
		{name: "move cooldown", file: "muster:\n  room:\n    move-cooldown: -1\n",
			want: "config: muster.room.move-cooldown / MUSTER__ROOM__MOVE_COOLDOWN: want a positive duration, got -1s (line 3)", err: config.ErrInvalid},
		{name: "code length", file: "muster:\n  lobby:\n    code-length: 9\n",
			want: "config: muster.lobby.code-length / MUSTER__LOBBY__CODE_LENGTH: want 4-6, got 9 (line 3)", err: config.ErrInvalid},
		{name: "playlists not a list", file: "muster:\n  matchmaking:\n    playlists: duel\n",
			want: `config: muster.matchmaking.playlists / MUSTER__MATCHMAKING__PLAYLISTS: want a list, got "duel" (line 3)`, err: config.ErrInvalid},
		{name: "playlist without a name", file: "muster:\n  matchmaking:\n    playlists:\n      - name: duel\n      - teams: 3\n",
			want: `config: muster.matchmaking.playlists.1.name / MUSTER__MATCHMAKING__PLAYLISTS__1__NAME: want 1-64 printable bytes without spaces, got ""`, err: config.ErrInvalid},
		{name: "playlist twice", file: "muster:\n  matchmaking:\n    playlists:\n      - name: duel\n      - name: duel\n",
			want: `config: muster.matchmaking.playlists.1.name / MUSTER__MATCHMAKING__PLAYLISTS__1__NAME: playlist "duel" is also item 0 (line 5)`, err: config.ErrInvalid},
		{name: "playlist too big", file: "muster:\n  matchmaking:\n    playlists:\n      - {name: big, teams: 100, team-size: 11}\n",
			want: `config: muster.matchmaking.playlists.0.team-size / MUSTER__MATCHMAKING__PLAYLISTS__0__TEAM_SIZE: a match of 100 teams of 11 is over the limit of 1000 players (line 4)`, err: config.ErrInvalid},
		{name: "playlist overflowing", file: "muster:\n  matchmaking:\n    playlists:\n      - {name: big, teams: 4294967296, team-size: 4294967296}\n",
			want: `config: muster.matchmaking.playlists.0.team-size / MUSTER__MATCHMAKING__PLAYLISTS__0__TEAM_SIZE: a match of 4294967296 teams of 4294967296 is over the limit of 1000 players (line 4)`, err: config.ErrInvalid},
		{name: "workers", environ: []string{"MUSTER__ROOM__WORKERS=99999999999"},
			want: `config: muster.room.workers / MUSTER__ROOM__WORKERS: want 0 (one per CPU) to 1024, got 99999999999 (from the environment)`, err: config.ErrInvalid},
		{name: "send queue", environ: []string{"MUSTER__ROOM__SEND_QUEUE=99999999999"},
			want: `config: muster.room.send-queue / MUSTER__ROOM__SEND_QUEUE: want 1-65536 frames, got 99999999999 (from the environment)`, err: config.ErrInvalid},
		{name: "max catch-up", environ: []string{"MUSTER__ROOM__MAX_CATCH_UP=99999999999"},
			want: `config: muster.room.max-catch-up / MUSTER__ROOM__MAX_CATCH_UP: want 1-1000 steps, got 99999999999 (from the environment)`, err: config.ErrInvalid},
		{name: "read limit", file: "muster:\n  room:\n    read-limit: 1073741824\n",
			want: `config: muster.room.read-limit / MUSTER__ROOM__READ_LIMIT: want 1-1048576 bytes (1 MiB), got 1073741824 (line 3)`, err: config.ErrInvalid},
		// The WebSocket library reads one byte past its limit: the largest
		// int64 wrapped round to a negative limit, which is none at all.
		{name: "read limit wrapping", environ: []string{"MUSTER__ROOM__READ_LIMIT=9223372036854775807"},
			want: `config: muster.room.read-limit / MUSTER__ROOM__READ_LIMIT: want 1-1048576 bytes (1 MiB), got 9223372036854775807 (from the environment)`, err: config.ErrInvalid},
		// A redeemed ticket's nonce is kept for ticket-ttl + 1m, which
		// wrapped round to a negative time: the ticket could be used again.
		{name: "ticket ttl", environ: []string{"MUSTER__ROOM__TICKET_TTL=2562047h47m"},
			want: `config: muster.room.ticket-ttl / MUSTER__ROOM__TICKET_TTL: want at most 1h, got 2562047h47m0s (from the environment)`, err: config.ErrInvalid},
		// The end of a room's absence is counted from the host's start, and
		// wrapped round: the room ended at once.
		{name: "away timeout", file: "muster:\n  room:\n    away-timeout: 2562047h47m\n",
			want: `config: muster.room.away-timeout / MUSTER__ROOM__AWAY_TIMEOUT: want at most 24h, got 2562047h47m0s (line 3)`, err: config.ErrInvalid},
		{name: "lobby members", environ: []string{"MUSTER__LOBBY__MAX_MEMBERS=1000000"},
			want: `config: muster.lobby.max-members / MUSTER__LOBBY__MAX_MEMBERS: want 1-1000 members, got 1000000 (from the environment)`, err: config.ErrInvalid},
		{name: "negative rating", environ: []string{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=duel", "MUSTER__MATCHMAKING__PLAYLISTS__0__RATING__WINDOW=-5"},
			want: `config: muster.matchmaking.playlists.0.rating.window / MUSTER__MATCHMAKING__PLAYLISTS__0__RATING__WINDOW: want a finite number, not negative, got -5 (from the environment)`, err: config.ErrInvalid},
		{name: "not a number", environ: []string{"MUSTER__MATCHMAKING__PLAYLISTS__0__RATING__MAX=inf"},
			want: `config: muster.matchmaking.playlists.0.rating.max / MUSTER__MATCHMAKING__PLAYLISTS__0__RATING__MAX: want a number, got "inf" (from the environment)`, err: config.ErrInvalid},
		{name: "misspelt item key", file: "muster:\n  matchmaking:\n    playlists:\n      - name: duel\n        team_size: 2\n",
			want: `config: muster.matchmaking.playlists.0.team_size / MUSTER__MATCHMAKING__PLAYLISTS__0__TEAM_SIZE: unknown key; did you mean muster.matchmaking.playlists.0.team-size? (line 5)`, err: config.ErrUnknownKey},
		{name: "list by variable", environ: []string{"MUSTER__MATCHMAKING__PLAYLISTS=duel"},
			want: `config: muster.matchmaking.playlists / MUSTER__MATCHMAKING__PLAYLISTS: names a list; set its items' keys, such as MUSTER__MATCHMAKING__PLAYLISTS__0__NAME (from the environment)`, err: config.ErrUnknownKey},
		{name: "bad item number", environ: []string{"MUSTER__MATCHMAKING__PLAYLISTS__X__NAME=duel"},
			want: `config: muster.matchmaking.playlists.x.name / MUSTER__MATCHMAKING__PLAYLISTS__X__NAME: want an item number 0-99 after MUSTER__MATCHMAKING__PLAYLISTS, got "x" (from the environment)`, err: config.ErrUnknownKey},
		{name: "item number too big", environ: []string{"MUSTER__MATCHMAKING__PLAYLISTS__100__NAME=duel"},
			want: `config: muster.matchmaking.playlists.100.name / MUSTER__MATCHMAKING__PLAYLISTS__100__NAME: want an item number 0-99 after MUSTER__MATCHMAKING__PLAYLISTS, got "100" (from the environment)`, err: config.ErrUnknownKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tt.environ != nil {
				_, err = config.Load("", tt.environ)
			} else {
				_, err = config.Parse([]byte(tt.file), nil)
			}
			if err == nil || err.Error() != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestSectionsAgreeWithPackages: a section Validate accepts, the package
// accepts; one the package refuses, Validate refuses first.
func TestSectionsAgreeWithPackages(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=duel"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=" + strings.Repeat("d", 65)},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=a b"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAMS=-1"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAMS=1000"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAMS=1001"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__1__NAME=d"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAMS=4294967296", "MUSTER__MATCHMAKING__PLAYLISTS__0__TEAM_SIZE=4294967296"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__PLAYLISTS__0__RATING__DEFAULT=-3"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__MATCHMAKING__HOLD=-1"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__CODE_LENGTH=4", "MUSTER__LOBBY__MAX_MEMBERS=1"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__CODE_LENGTH=3"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__MAX_MEMBERS=-2"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__MAX_MEMBERS=1000", "MUSTER__LOBBY__CODE_LOCKOUT=24h", "MUSTER__MATCHMAKING__HOLD=1h"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__ARRIVAL_TIMEOUT=-1"},
		{"MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=d", "MUSTER__LOBBY__MAX_MEMBERS=1001"},
	} {
		c := config.Default()
		if err := config.ApplyEnv(&c, env); err != nil {
			t.Fatal(err)
		}
		valid := c.Validate()
		mc, pls := c.MatchmakingConfig()
		_, merr := matchmaking.New(mc, pls...)
		_, lerr := lobby.New(c.LobbyConfig())
		if started := errors.Join(merr, lerr); (valid == nil) != (started == nil) {
			t.Errorf("%q: Validate = %v but the packages say %v", env, valid, started)
		}
	}
}

// TestLoadStep: the published load's step is a key, passed to the fleet.
func TestLoadStep(t *testing.T) {
	t.Parallel()
	c, err := config.Load("", []string{"MUSTER__SERVER__CAPACITY__LOAD_STEP=-1"})
	if err != nil {
		t.Fatal(err)
	}
	if f := c.FleetConfig("n1", "10.0.0.1"); f.LoadStep != -1 {
		t.Errorf("FleetConfig.LoadStep = %d, want -1", f.LoadStep)
	}
	_, err = config.Load("", []string{"MUSTER__SERVER__CAPACITY__LOAD_STEP=-2"})
	if want := "config: muster.server.capacity.load-step / MUSTER__SERVER__CAPACITY__LOAD_STEP: want 0 (max-load/20), -1 (exact) or a positive step, got -2 (from the environment)"; err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}

// nopGame is the smallest room.Game, for building a room.Host.
type nopGame struct{}

func (nopGame) NewSim(room.Info) struct{}                                          { return struct{}{} }
func (nopGame) Join(*room.Room[struct{}, struct{}, struct{}], string) struct{}     { return struct{}{} }
func (nopGame) Leave(*room.Room[struct{}, struct{}, struct{}], struct{})           {}
func (nopGame) Input(*room.Room[struct{}, struct{}, struct{}], struct{}, struct{}) {}
func (nopGame) FixedStep(*room.Room[struct{}, struct{}, struct{}])                 {}

// TestRoomAgreesWithHost: muster.room values that Validate accepts,
// room.New accepts, and the ones it refuses, Validate refuses.
func TestRoomAgreesWithHost(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{
		nil,
		{"MUSTER__ROOM__RATE=1000", "MUSTER__ROOM__WORKERS=1", "MUSTER__ROOM__READ_LIMIT=1"},
		{"MUSTER__ROOM__RATE=1001"},
		{"MUSTER__ROOM__RATE=-1"},
		{"MUSTER__ROOM__WORKERS=-1"},
		{"MUSTER__ROOM__MAX_CATCH_UP=-1"},
		{"MUSTER__ROOM__SEND_QUEUE=-1"},
		{"MUSTER__ROOM__WORKERS=1024", "MUSTER__ROOM__SEND_QUEUE=65536"},
		{"MUSTER__ROOM__MAX_CATCH_UP=1000", "MUSTER__ROOM__READ_LIMIT=1048576", "MUSTER__ROOM__TICKET_TTL=1h", "MUSTER__ROOM__AWAY_TIMEOUT=24h"},
		{"MUSTER__ROOM__MAX_CATCH_UP=1001"},
		{"MUSTER__ROOM__READ_LIMIT=1048577"},
		{"MUSTER__ROOM__READ_LIMIT=9223372036854775807"},
		{"MUSTER__ROOM__TICKET_TTL=61m"},
		{"MUSTER__ROOM__TICKET_TTL=2562047h47m"},
		{"MUSTER__ROOM__MOVE_COOLDOWN=61m"},
		{"MUSTER__ROOM__PING_INTERVAL=6m"},
		{"MUSTER__ROOM__HELLO_TIMEOUT=6m"},
		{"MUSTER__ROOM__DRAIN_GRACE=6m"},
		{"MUSTER__ROOM__AWAY_TIMEOUT=25h"},
		{"MUSTER__ROOM__LIMITS__WINDOW=24h", "MUSTER__ROOM__LIMITS__LOCKOUT=24h"},
		{"MUSTER__ROOM__LIMITS__WINDOW=25h"},
		{"MUSTER__ROOM__LIMITS__LOCKOUT=25h"},
		{"MUSTER__ROOM__WORKERS=1025"},
		{"MUSTER__ROOM__WORKERS=99999999999"},
		{"MUSTER__ROOM__SEND_QUEUE=65537"},
		{"MUSTER__ROOM__MOVE_COOLDOWN=-1"},
		{"MUSTER__ROOM__PING_INTERVAL=1ms", "MUSTER__ROOM__TICKET_TTL=1ms"},
		{"MUSTER__ROOM__LIMITS__STORE=backplane"},
		{"MUSTER__ROOM__LIMITS__STORE=Memory"},
		{"MUSTER__ROOM__LIMITS__CONNECTS=-1"},
		{"MUSTER__ROOM__LIMITS__OPEN=-1"},
		{"MUSTER__ROOM__LIMITS__OPEN=0"},
		{"MUSTER__ROOM__LIMITS__OPEN=1"},
		{"MUSTER__ROOM__LIMITS__LOCKOUT=-1"},
	} {
		c := config.Default()
		if err := config.ApplyEnv(&c, env); err != nil {
			t.Fatal(err)
		}
		valid := c.Validate()
		_, err := room.New[struct{}, struct{}, struct{}](nopGame{}, c.RoomConfig(), nil)
		if (valid == nil) != (err == nil) {
			t.Errorf("%q: Validate = %v but room.New = %v", env, valid, err)
		}
	}
}

// TestUpperBounds: every numeric and duration key that a huge value would
// make run badly (memory held per player or per frame, a worker held by one
// room, a duration that the packages add to or multiply until it wraps
// round) takes its bound and refuses the next value, and the largest a
// variable can hold, with one line naming the key and its variable.
func TestUpperBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ key, most, next, huge string }{
		{"muster.room.max-catch-up", "1000", "1001", "9223372036854775807"},
		{"muster.room.read-limit", "1048576", "1048577", "9223372036854775807"},
		{"muster.room.ping-interval", "5m", "5m0.001s", "2562047h47m"},
		{"muster.room.hello-timeout", "5m", "301", "2562047h47m"},
		{"muster.room.ticket-ttl", "1h", "3601", "2562047h47m"},
		{"muster.room.move-cooldown", "1h", "3601", "2562047h47m"},
		{"muster.room.away-timeout", "24h", "86401", "2562047h47m"},
		{"muster.room.drain-grace", "5m", "301", "2562047h47m"},
		{"muster.room.limits.window", "24h", "86401", "2562047h47m"},
		{"muster.room.limits.lockout", "24h", "86401", "2562047h47m"},
		{"muster.matchmaking.tick", "1m", "61", "2562047h47m"},
		{"muster.matchmaking.hold", "1h", "3601", "2562047h47m"},
		{"muster.lobby.max-members", "1000", "1001", "9223372036854775807"},
		{"muster.lobby.tick", "1m", "61", "2562047h47m"},
		{"muster.lobby.arrival-timeout", "1h", "3601", "2562047h47m"},
		{"muster.lobby.code-lockout", "24h", "86401", "2562047h47m"},
		{"muster.server.drain.timeout", "24h", "86401", "2562047h47m"},
		{"muster.server.fleet.redis-timeout", "1m", "61", "2562047h47m"},
		{"muster.server.fleet.heartbeat", "1m", "61", "2562047h47m"},
	} {
		t.Run(tt.key, func(t *testing.T) {
			t.Parallel()
			v := config.EnvName(tt.key)
			if _, err := config.Load("", []string{v + "=" + tt.most}); err != nil {
				t.Errorf("%s=%s: %v", v, tt.most, err)
			}
			for _, val := range []string{tt.next, tt.huge} {
				_, err := config.Load("", []string{v + "=" + val})
				if prefix := "config: " + tt.key + " / " + v + ": "; err == nil || !strings.HasPrefix(err.Error(), prefix) || !errors.Is(err, config.ErrInvalid) {
					t.Errorf("%s=%s: error %v, want one starting %q", v, val, err, prefix)
				}
			}
		})
	}
}
