package room

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/muster-gg/muster/backplane/memory"
)

// Counter counts once for all servers: the fleet implements it with its
// backplane (and falls back to memory); a Host without a fleet counts in
// memory.
type Counter interface {
	Increment(ctx context.Context, key string, ttl time.Duration, by int64) (int64, error)
}

// Tickets mints and redeems connection tickets: a player id, an expiry and
// a nonce, signed with HMAC-SHA256 under a key bound to the cluster. Any
// server of the cluster with the same secret can check a ticket, and each
// is redeemed once across the cluster (through the Counter). A server of
// another cluster refuses it, even with the same secret and store: the
// count of uses is kept per cluster, so a ticket good in two clusters
// could be used once in each. Safe for concurrent use.
//
// The format, for a sign-in service written in another language:
//
//	key    = HMAC-SHA256(secret, "muster ticket v1")                  for the cluster "default"
//	key    = HMAC-SHA256(secret, "muster ticket v1 cluster=" cluster)  for any other cluster
//	body   = expiry (8 bytes, big-endian Unix seconds) | nonce (12 random bytes) | player id (1-128 bytes of UTF-8)
//	ticket = base64url(body) "." base64url(HMAC-SHA256(key, body))   (base64url without padding)
//
// The client passes it as ?ticket=. A ticket is refused after its expiry,
// on a server of another cluster, and on its second use anywhere in the
// cluster: the nonce is counted through the fleet's backplane by the
// server that redeems it.
type Tickets struct {
	cluster string
	key     []byte
	// dflt is the key of the cluster "default" on a server of another
	// cluster, to name the mistake of a sign-in service that mints for
	// the default cluster; nil on the default cluster.
	dflt    []byte
	ttl     time.Duration
	counter Counter
	now     func() time.Time
}

// maxPlayerID bounds a player id carried by a ticket.
const maxPlayerID = 128

// DefaultCluster is the cluster of a fleet that names none
// (fleet.Config.Cluster), and of a Host without a fleet.
const DefaultCluster = "default"

// NewTickets returns a minter of tickets for secret (the fleet's
// security key, room.Config.Secret) valid for ttl (30s when 0), for a
// sign-in service that runs apart from the game servers: its Issue makes
// tickets any server of the cluster "default" redeems, once. Its own
// Redeem counts uses in this process only; servers redeem with
// Host.Tickets. NewClusterTickets mints for another cluster.
func NewTickets(secret string, ttl time.Duration) (*Tickets, error) {
	return NewClusterTickets(secret, DefaultCluster, ttl)
}

// NewClusterTickets is NewTickets for the servers of cluster
// (muster.server.fleet.cluster, MUSTER__SERVER__FLEET__CLUSTER): the
// servers of any other cluster refuse its tickets.
func NewClusterTickets(secret, cluster string, ttl time.Duration) (*Tickets, error) {
	if secret == "" {
		return nil, fmt.Errorf("%w: NewTickets needs the fleet's secret (muster.security.key, MUSTER__SECURITY__KEY)", ErrConfig)
	}
	if ttl < 0 {
		return nil, configError("ticket-ttl", "%s is negative", ttl)
	}
	if cluster == "" {
		return nil, fmt.Errorf("%w: NewClusterTickets needs the cluster (muster.server.fleet.cluster, MUSTER__SERVER__FLEET__CLUSTER)", ErrConfig)
	}
	if ttl == 0 {
		ttl = 30 * time.Second
	}
	t := newTickets(secret, ttl, memory.New())
	t.bind(secret, cluster, t.counter)
	return t, nil
}

// newTickets returns the tickets of the cluster "default"; bind moves
// them to another.
func newTickets(secret string, ttl time.Duration, counter Counter) *Tickets {
	return &Tickets{cluster: DefaultCluster, key: ticketKey(secret, DefaultCluster), ttl: ttl, counter: counter, now: time.Now}
}

// bind makes t mint and redeem the tickets of cluster, counted by
// counter. Call it before t is used.
func (t *Tickets) bind(secret, cluster string, counter Counter) {
	cluster = cmp.Or(cluster, DefaultCluster)
	t.cluster, t.key, t.dflt, t.counter = cluster, ticketKey(secret, cluster), nil, counter
	if cluster != DefaultCluster {
		t.dflt = ticketKey(secret, DefaultCluster)
	}
}

// ticketKey derives the key that signs the tickets of cluster from the
// secret. The default cluster's is the key of the tickets made before
// tickets were bound to a cluster, so that a fleet of one cluster keeps
// redeeming them through a rolling upgrade.
func ticketKey(secret, cluster string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("muster ticket v1"))
	if cluster != DefaultCluster {
		m.Write([]byte(" cluster=" + cluster))
	}
	return m.Sum(nil)
}

// Issue returns a ticket for playerID, valid for the configured time (30s
// by default) and redeemable once.
func (t *Tickets) Issue(playerID string) (string, error) {
	if playerID == "" || len(playerID) > maxPlayerID || !utf8.ValidString(playerID) {
		return "", fmt.Errorf("issue ticket: player id must be 1-%d bytes of UTF-8", maxPlayerID)
	}
	var nonce [12]byte
	rand.Read(nonce[:])
	body := make([]byte, 8, 8+len(nonce)+len(playerID))
	binary.BigEndian.PutUint64(body, uint64(t.now().Add(t.ttl).Unix()))
	body = append(append(body, nonce[:]...), playerID...)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(t.sign(body)), nil
}

func (t *Tickets) sign(body []byte) []byte { return ticketMAC(t.key, body) }

func ticketMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// parse checks a ticket's signature and expiry and returns its player id
// and nonce. It does not redeem it.
func (t *Tickets) parse(ticket string) (playerID, nonce string, err error) {
	b64, sig64, ok := strings.Cut(ticket, ".")
	if !ok || len(ticket) > 512 {
		return "", "", fmt.Errorf("%w: malformed", ErrTicket)
	}
	enc := base64.RawURLEncoding
	body, err1 := enc.DecodeString(b64)
	sig, err2 := enc.DecodeString(sig64)
	if err1 != nil || err2 != nil || len(body) <= 8+12 {
		return "", "", fmt.Errorf("%w: malformed", ErrTicket)
	}
	if !hmac.Equal(sig, t.sign(body)) {
		if t.dflt != nil && hmac.Equal(sig, ticketMAC(t.dflt, body)) {
			return "", "", fmt.Errorf("%w: bad signature: of cluster %s, not %s", ErrTicket, DefaultCluster, t.cluster)
		}
		return "", "", fmt.Errorf("%w: bad signature", ErrTicket)
	}
	expires := time.Unix(int64(binary.BigEndian.Uint64(body)), 0)
	if !t.now().Before(expires) {
		return "", "", fmt.Errorf("%w: expired", ErrTicket)
	}
	return string(body[20:]), enc.EncodeToString(body[8:20]), nil
}

// Redeem checks ticket and marks it used, once for the whole fleet, and
// returns its player id.
func (t *Tickets) Redeem(ctx context.Context, ticket string) (string, error) {
	id, nonce, err := t.parse(ticket)
	if err != nil {
		return "", err
	}
	n, err := t.counter.Increment(ctx, "ticket:"+nonce, t.ttl+time.Minute, 1)
	if err != nil {
		return "", fmt.Errorf("redeem ticket: %w", err)
	}
	if n != 1 {
		return "", fmt.Errorf("%w: already used", ErrTicket)
	}
	return id, nil
}
