package config

import (
	"strings"
	"time"
)

// Federation is muster.federation: this game server as a server of a
// regional federation node (package federation). When HomeURL is set, the
// server runs the node agent in its own process (enrolling once with
// NodeKey and keeping its server key in KeyFile, then announcing
// GameAddress every AnnounceEvery), admits players with the tokens home
// mints (TokenSecret), and reports every room's whole state to home.
// Default: HomeURL is "" and the server is not a federation node.
type Federation struct {
	// HomeURL is home's base URL, such as https://home.example.org.
	// Default "": federation off.
	HomeURL string `yaml:"home-url"`
	// NodeID is this node's id at home; a home token minted for another
	// node is refused. Default "": not checked.
	NodeID string `yaml:"node-id"`
	// TokenSecret is the game-server token secret shared with home, at
	// least 16 bytes. Required with HomeURL. Secret.
	TokenSecret string `yaml:"token-secret"`
	// KeyFile is where this server's key is kept (mode 0600); each game
	// server has a file of its own. Required with HomeURL.
	KeyFile string `yaml:"key-file"`
	// NodeKey is the node key home's admin gave, used once to enrol this
	// server while KeyFile holds no key. Default "". Secret.
	NodeKey string `yaml:"node-key"`
	// Name labels this server at home. Default "": the host name.
	Name string `yaml:"name"`
	// GameAddress is the address players are sent to for this server's
	// game, such as wss://au.example.org/play, announced as the "game"
	// service. Default "": none announced.
	GameAddress string `yaml:"game-address"`
	// AnnounceEvery is how often the server announces itself to home; it
	// must stay below home's silent-after (3m by default). At most 1h.
	// Default 60s.
	AnnounceEvery Duration `yaml:"announce-every"`
	// Role is what the server is on its node: FederationRoleFull, a whole
	// game server (its own queues, lobbies and rooms, beside the rooms
	// home places), or FederationRoleGame, the seed's "game role only": it
	// hosts only the rooms home places, entered with home's tokens, and
	// has no queues or lobbies of its own (muster.matchmaking.playlists
	// must then be empty). Default "full".
	Role string `yaml:"role"`
	// Home are the settings of a federation home (muster-home serve); a
	// game server ignores them.
	Home FederationHome `yaml:"home"`
}

// The values of muster.federation.role.
const (
	FederationRoleFull = "full"
	FederationRoleGame = "game"
)

// minTokenSecret is the shortest federation token secret, in bytes (the
// federation package's own minimum).
const minTokenSecret = 16

// validateFederation checks muster.federation but for home-url's form,
// which muster.CheckConfig checks with the federation's own rule. Secrets
// are never echoed.
func (c Config) validateFederation() error {
	f := c.Federation
	bad := func(key, format string, args ...any) error {
		return origin{}.errorf(ErrInvalid, "muster.federation."+key, format, args...)
	}
	if f.Role != "" && f.Role != FederationRoleFull && f.Role != FederationRoleGame {
		return bad("role", "want %s or %s, got %s", FederationRoleFull, FederationRoleGame, quote(f.Role))
	}
	if f.HomeURL == "" {
		for key, v := range map[string]string{"token-secret": f.TokenSecret, "key-file": f.KeyFile, "node-key": f.NodeKey} {
			if v != "" {
				return bad(key, "given, but muster.federation.home-url is empty (federation off)")
			}
		}
		if f.Role == FederationRoleGame {
			return bad("role", "given, but muster.federation.home-url is empty (federation off)")
		}
		return nil
	}
	switch {
	case f.NodeID != "" && !validFederationID(f.NodeID):
		return bad("node-id", "want a node id of letters, digits and dashes, got %s", quote(f.NodeID))
	case len(f.TokenSecret) < minTokenSecret:
		return bad("token-secret", "a federation node needs home's token secret, at least %d bytes; got %d", minTokenSecret, len(f.TokenSecret))
	case f.KeyFile == "":
		return bad("key-file", "a federation node needs a file to keep its server key in")
	case strings.ContainsFunc(f.Name, func(r rune) bool { return r < ' ' || r == 0x7f }) || len(f.Name) > 128:
		return bad("name", "want a label of at most 128 printable bytes, got %s", quote(f.Name))
	case strings.ContainsFunc(f.GameAddress, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return bad("game-address", "want an address or URL without spaces, got %s", quote(f.GameAddress))
	case f.Role == FederationRoleGame && len(c.Matchmaking.Playlists) > 0:
		return bad("role", "a game-role server hosts only the rooms home places and has no queues of its own; empty muster.matchmaking.playlists (MUSTER__MATCHMAKING__PLAYLISTS__*) or set role %s", FederationRoleFull)
	}
	return positiveUpTo("federation.announce-every", f.AnnounceEvery, Duration(time.Hour))
}

// validFederationID reports whether s looks like a federation node id:
// 1-63 lowercase letters, digits and dashes, not starting with a dash.
func validFederationID(s string) bool {
	return s != "" && len(s) <= 63 && s[0] != '-' && !strings.ContainsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-')
	})
}
