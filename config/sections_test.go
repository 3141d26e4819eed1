package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/muster-gg/muster/config"
)

// TestBadSections: each section's bad values, named by key and variable.
func TestBadSections(t *testing.T) {
	t.Parallel()
	refuses(t, []badCase{
		{name: "rate", file: "muster:\n  room:\n    rate: 0\n",
			want: "config: muster.room.rate / MUSTER__ROOM__RATE: want steps per second, 1-1000, got 0 (line 3)", err: config.ErrInvalid},
		{name: "open", file: "muster:\n  room:\n    limits:\n      open: -1\n",
			want: "config: muster.room.limits.open / MUSTER__ROOM__LIMITS__OPEN: want at least 0, got -1 (line 4)", err: config.ErrInvalid},
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
		// A redeemed ticket's nonce is kept for ticket-ttl + 1m, which
		// wrapped round to a negative time: the ticket could be used again.
		{name: "ticket ttl", environ: []string{"MUSTER__ROOM__TICKET_TTL=2562047h47m"},
			want: `config: muster.room.ticket-ttl / MUSTER__ROOM__TICKET_TTL: want at most 1h, got 2562047h47m0s (from the environment)`, err: config.ErrInvalid},
		// The end of a room's absence is counted from the host's start, and
		// wrapped round: the room ended at once.
		{name: "away timeout", file: "muster:\n  room:\n    away-timeout: 2562047h47m\n",
			want: `config: muster.room.away-timeout / MUSTER__ROOM__AWAY_TIMEOUT: want at most 24h, got 2562047h47m0s (line 3)`, err: config.ErrInvalid},
		{name: "negative checkpoint interval", environ: []string{"MUSTER__ROOM__CHECKPOINT__INTERVAL=-1s"},
			want: `config: muster.room.checkpoint.interval / MUSTER__ROOM__CHECKPOINT__INTERVAL: want 0 (off) or a duration of at most 10m, got -1s (from the environment)`, err: config.ErrInvalid},
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
	})
}

// TestUpperBounds: every numeric and duration key that a huge value would
// make run badly (memory held per player or per frame, a worker held by one
// room, a duration that the packages add to or multiply until it wraps
// round) takes its bound and refuses the next value, and the largest a
// variable can hold, with one line naming the key and its variable.
func TestUpperBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ key, most, next, huge string }{
		{"muster.room.ping-interval", "5m", "5m0.001s", "2562047h47m"},
		{"muster.room.hello-timeout", "5m", "301", "2562047h47m"},
		{"muster.room.ticket-ttl", "1h", "3601", "2562047h47m"},
		{"muster.room.move-cooldown", "1h", "3601", "2562047h47m"},
		{"muster.room.away-timeout", "24h", "86401", "2562047h47m"},
		{"muster.room.drain-grace", "5m", "301", "2562047h47m"},
		{"muster.room.checkpoint.interval", "10m", "601", "2562047h47m"},
		{"muster.room.limits.window", "24h", "86401", "2562047h47m"},
		{"muster.room.limits.lockout", "24h", "86401", "2562047h47m"},
		{"muster.matchmaking.tick", "1m", "61", "2562047h47m"},
		{"muster.matchmaking.hold", "1h", "3601", "2562047h47m"},
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
			if _, err := config.Load("", []string{v + "=" + tt.most}, defaults(t)); err != nil {
				t.Errorf("%s=%s: %v", v, tt.most, err)
			}
			for _, val := range []string{tt.next, tt.huge} {
				_, err := config.Load("", []string{v + "=" + val}, defaults(t))
				if prefix := "config: " + tt.key + " / " + v + ": "; err == nil || !strings.HasPrefix(err.Error(), prefix) || !errors.Is(err, config.ErrInvalid) {
					t.Errorf("%s=%s: error %v, want one starting %q", v, val, err, prefix)
				}
			}
		})
	}
}
