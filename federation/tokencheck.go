package federation

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/muster-gg/muster/room"
)

// TokenCheckerConfig configures a TokenChecker. NewTokenChecker copies it.
type TokenCheckerConfig struct {
	// Secret is the game-server token secret shared with home (MintToken's
	// secret), at least 16 bytes. Required.
	Secret []byte `yaml:"-"`

	// NodeID is this node's id at home; a token minted for another node is
	// refused. Default empty: the node is not checked.
	NodeID string `yaml:"node-id"`

	// Counter records redeemed tokens, once for every server that shares
	// it: a room host's fleet (fleet.Fleet implements it). Default a
	// counter in this process's memory.
	Counter room.Counter `yaml:"-"`

	// Now is the clock for expiry. Default time.Now.
	Now func() time.Time `yaml:"-"`
}

// TokenChecker admits players with the game-server tokens home mints
// (MintToken): it is a room.TicketChecker, for a node's room host
// (room.Host.AddTicketChecker, or muster.WithTicketCheckers), and each
// token is redeemed once. Used as a module of the same host too
// (room.Host.Use), it seats each holder in the room its token names (see
// Attach); muster.Server does both for muster.federation. Safe for
// concurrent use; it starts nothing.
type TokenChecker struct {
	secret  []byte
	nodeID  string
	now     func() time.Time
	mu      sync.Mutex
	counter room.Counter

	// The seating of token holders, once attached to a host (tokenseat.go).
	arriveMu sync.Mutex // one arrival at a time opens or joins a home room
	host     room.ModuleHost
	seat     seater
	log      *slog.Logger
	grants   map[string]grant     // by player: the room its token named
	home     map[string]bool      // the open home rooms
	other    map[string]bool      // the open rooms of other kinds
	ended    map[string]time.Time // home rooms that ended here, and when
}

var _ room.TicketChecker = (*TokenChecker)(nil)

// NewTokenChecker returns a TokenChecker for cfg.
func NewTokenChecker(cfg TokenCheckerConfig) (*TokenChecker, error) {
	if len(cfg.Secret) < minTokenSecret {
		return nil, fmt.Errorf("%w: token Secret must be at least %d bytes", ErrInvalidConfig, minTokenSecret)
	}
	if cfg.NodeID != "" && !validID(cfg.NodeID) {
		return nil, fmt.Errorf("%w: NodeID %q is not a node id", ErrInvalidConfig, cfg.NodeID)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Counter == nil {
		cfg.Counter = newMemCounter(cfg.Now)
	}
	return &TokenChecker{
		secret: append([]byte(nil), cfg.Secret...), nodeID: cfg.NodeID, counter: cfg.Counter, now: cfg.Now,
		grants: map[string]grant{}, home: map[string]bool{}, other: map[string]bool{}, ended: map[string]time.Time{},
	}, nil
}

// UseCounter makes c record redeemed tokens from now on, such as the
// fleet of the server the checker was given to (muster.Server.Fleet), so
// that each token is redeemed once across the node's servers.
func (c *TokenChecker) UseCounter(counter room.Counter) {
	c.mu.Lock()
	c.counter = counter
	c.mu.Unlock()
}

// CheckTicket implements room.TicketChecker: it returns the player a home
// token admits (Check returns the room too). A ticket that is not a valid
// home token for this node (malformed, forged, expired, for another node,
// or already used) gets an error
// wrapping room.ErrTicket; a counter that cannot be reached, an error that
// does not.
func (c *TokenChecker) CheckTicket(ctx context.Context, ticket string) (string, error) {
	t, err := c.Check(ctx, ticket)
	return t.PlayerID, err
}

// Check redeems a home token as CheckTicket does and returns what it
// carries: the player and the room home placed it in. Once the checker is
// attached to a room host (Attach), the player is seated in that room
// when it arrives, or closed with 4001 and ReasonRoomNotHere when the host
// does not host it.
func (c *TokenChecker) Check(ctx context.Context, ticket string) (Token, error) {
	now := c.now()
	t, err := ParseToken(c.secret, ticket, now)
	if err != nil {
		return Token{}, fmt.Errorf("%w: home token: %w", room.ErrTicket, err)
	}
	if c.nodeID != "" && t.NodeID != "" && t.NodeID != c.nodeID {
		return Token{}, fmt.Errorf("%w: home token for another node", room.ErrTicket)
	}
	c.mu.Lock()
	counter := c.counter
	c.mu.Unlock()
	// The signature is unique to each minted token: redeem it once, for as
	// long as the token could be used.
	sig := ticket[strings.LastIndexByte(ticket, '.')+1:]
	n, err := counter.Increment(ctx, "fedtoken:"+sig, t.Expires.Sub(now)+time.Minute, 1)
	if err != nil {
		return Token{}, fmt.Errorf("redeem home token: %w", err)
	}
	if n != 1 {
		return Token{}, fmt.Errorf("%w: home token already used", room.ErrTicket)
	}
	c.mu.Lock()
	c.grantLocked(t.PlayerID, t.RoomID, t.Expires, now)
	c.mu.Unlock()
	return t, nil
}
