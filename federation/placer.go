package federation

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// CountryResolver looks up a player's country, such as from the profile
// or the sign-in address. The Placer calls it in the background at
// sign-in, so that placing a room never waits for it.
type CountryResolver interface {
	// Country returns the ISO 3166-1 alpha-2 code of the player's country,
	// or "" when it is not known. It must return when ctx ends.
	Country(ctx context.Context, playerID, ip string) (string, error)
}

// CountryResolverFunc adapts a function to CountryResolver.
type CountryResolverFunc func(ctx context.Context, playerID, ip string) (string, error)

// Country implements CountryResolver.
func (f CountryResolverFunc) Country(ctx context.Context, playerID, ip string) (string, error) {
	return f(ctx, playerID, ip)
}

// Placement is where a room is played.
type Placement struct {
	// Node is the regional node's id, "" for home.
	Node string `json:"node,omitempty"`
	// Address is the game server's address: the node's announced game
	// service, or home's (PlacerConfig.HomeServices) for home.
	Address string `json:"address"`
}

// Home reports whether the placement is at home.
func (p Placement) Home() bool { return p.Node == "" }

// RoomInfo is what the Placer needs to know of a room.
type RoomInfo struct {
	// ID is the room's id; it spreads rooms over a node's servers.
	ID string
	// Members is how many players are in the room now.
	Members int
	// Placement is where the room is now; zero for a room being created.
	Placement Placement
}

// Placer decides where rooms are played, from the regions list it polls
// from home once a minute and from the players' countries it looks up at
// sign-in. It runs at home, beside the matchmaking.
//
// NewPlacer starts nothing. Run polls and runs the country lookups until
// its context ends. Place, ICEServers, SignIn and Country may be called
// from any goroutine at any time; before the first poll every room is
// placed at home.
type Placer struct {
	cfg     PlacerConfig
	log     *slog.Logger
	base    *url.URL // home, checked by homeBaseURL
	lookups chan lookup
	running atomic.Bool

	mu        sync.Mutex
	regions   []Region
	fetchedAt time.Time
	failing   bool
	countries map[string]countryEntry
}

type lookup struct{ playerID, ip string }

type countryEntry struct {
	country string
	at      time.Time
}

// NewPlacer returns a Placer for cfg. It starts nothing.
func NewPlacer(cfg PlacerConfig, logger *slog.Logger) (*Placer, error) {
	cfg, base, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Placer{
		cfg:       cfg,
		log:       componentLogger(logger),
		base:      base,
		lookups:   make(chan lookup, cfg.LookupQueue),
		countries: make(map[string]countryEntry),
	}, nil
}

// Run polls the regions list at once and every PollEvery, and runs the
// country lookups of SignIn on LookupWorkers goroutines, until ctx ends.
// It returns nil then, after every goroutine it started has ended; a
// second concurrent call returns ErrRunning.
func (p *Placer) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer p.running.Store(false)
	var wg sync.WaitGroup
	defer wg.Wait()
	for range p.cfg.LookupWorkers {
		wg.Go(func() { p.lookupLoop(ctx) })
	}
	t := time.NewTicker(p.cfg.PollEvery)
	defer t.Stop()
	for {
		p.step(ctx, p.cfg.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// step polls the regions list once. A failed poll keeps the last list
// until it is MaxStale old; it also forgets countries older than
// CountryTTL.
func (p *Placer) step(ctx context.Context, now time.Time) {
	list, err := p.fetch(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, e := range p.countries {
		if now.Sub(e.at) >= p.cfg.CountryTTL {
			delete(p.countries, id)
		}
	}
	if err == nil {
		if p.failing {
			p.log.Info("federation: regions list read again")
		}
		p.failing = false
		p.regions, p.fetchedAt = list.Regions, now
		return
	}
	if !p.failing && ctx.Err() == nil {
		p.log.Warn("federation: cannot read the regions list; keeping the last one", "err", err)
	}
	p.failing = true
	if p.regions != nil && now.Sub(p.fetchedAt) > p.cfg.MaxStale {
		p.log.Warn("federation: regions list too old; placing every room at home")
		p.regions = nil
	}
}

func (p *Placer) fetch(ctx context.Context) (RegionList, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base.JoinPath(PathRegions).String(), nil)
	if err != nil {
		return RegionList{}, err
	}
	var list RegionList
	err = doJSON(p.cfg.HTTPClient, req, &list)
	return list, err
}

// current returns the regions list, or nil when it is too old.
func (p *Placer) current() []Region {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.regions == nil || p.cfg.Now().Sub(p.fetchedAt) > p.cfg.MaxStale {
		return nil
	}
	return p.regions
}

// Regions returns the regions list of the last successful poll.
func (p *Placer) Regions() []Region { return slices.Clone(p.current()) }

// SignIn starts looking up the player's country in the background (on
// Run's workers). It never blocks: when the lookup queue is full the
// player is not looked up and their rooms are placed at home.
func (p *Placer) SignIn(playerID, ip string) {
	if p.cfg.Resolver == nil || playerID == "" {
		return
	}
	select {
	case p.lookups <- lookup{playerID: playerID, ip: ip}:
	default:
		p.log.Debug("federation: country lookup queue full", "player_id", playerID)
	}
}

// SignOut forgets the player's country.
func (p *Placer) SignOut(playerID string) {
	p.mu.Lock()
	delete(p.countries, playerID)
	p.mu.Unlock()
}

// Country returns the player's country as looked up at sign-in, or ""
// when it is not known (yet).
func (p *Placer) Country(playerID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.countries[playerID]
	if !ok || p.cfg.Now().Sub(e.at) >= p.cfg.CountryTTL {
		return ""
	}
	return e.country
}

func (p *Placer) lookupLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case l := <-p.lookups:
			p.resolve(ctx, l)
		}
	}
}

func (p *Placer) resolve(ctx context.Context, l lookup) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.LookupTimeout)
	defer cancel()
	c, err := p.cfg.Resolver.Country(ctx, l.playerID, l.ip)
	if err != nil {
		p.log.Debug("federation: country lookup failed", "player_id", l.playerID, "err", err)
		return
	}
	country, ok := normCountry(c)
	if !ok {
		return
	}
	p.mu.Lock()
	p.countries[l.playerID] = countryEntry{country: country, at: p.cfg.Now()}
	p.mu.Unlock()
}

// Place decides where a room is played. A room with members stays where it
// is: a joiner goes to the room, never to their own region. An empty room
// goes to a node in rotation for the creator's country that runs the game
// server (spread over its servers by room id); with no such node, or no
// known country, it goes home.
func (p *Placer) Place(room RoomInfo, creatorCountry string) Placement {
	if room.Members > 0 {
		if room.Placement == (Placement{}) {
			return p.home()
		}
		return room.Placement
	}
	country, ok := normCountry(creatorCountry)
	if !ok {
		return p.home()
	}
	var best Placement
	var bestScore uint64
	for _, r := range p.current() {
		if r.Country != country {
			continue
		}
		for _, addr := range gameServers(r) {
			if s := score(room.ID, r.Node, addr); best.Address == "" || s > bestScore {
				best, bestScore = Placement{Node: r.Node, Address: addr}, s
			}
		}
	}
	if best.Address == "" {
		return p.home()
	}
	return best
}

// PlaceFor is Place with the creator's country looked up at sign-in.
func (p *Placer) PlaceFor(room RoomInfo, creatorID string) Placement {
	return p.Place(room, p.Country(creatorID))
}

func (p *Placer) home() Placement {
	return Placement{Address: p.cfg.HomeServices[ServiceGame]}
}

// gameServers returns a region's game servers: those announced as
// ServiceGame and as ServicePhoton (the seed's name).
func gameServers(r Region) []string {
	if len(r.Services[ServicePhoton]) == 0 {
		return r.Services[ServiceGame]
	}
	return append(slices.Clone(r.Services[ServiceGame]), r.Services[ServicePhoton]...)
}

// score ranks the candidates of a rendezvous choice with the fleet's
// rendezvous hash, which mixes its result: similar names ("node-1",
// "node-2") score independently, so each wins its fair share.
func score(key string, parts ...string) uint64 {
	return fleet.Rendezvous(key, strings.Join(parts, "\x00"))
}

// ICEServers returns the STUN and TURN servers for a player from country:
// those of a node in rotation for that country that runs TURN, otherwise
// home's. A service that node does not run (STUN, say) is home's. With a
// TURNSecret, the TURN entries carry credentials minted for user.
func (p *Placer) ICEServers(country, user string) []ICEServer {
	turn := addrs(p.cfg.HomeServices[ServiceTURN])
	stun := addrs(p.cfg.HomeServices[ServiceSTUN])
	if c, ok := normCountry(country); ok {
		var best *Region
		var bestScore uint64
		regions := p.current()
		for i := range regions {
			r := &regions[i]
			if r.Country != c || len(r.Services[ServiceTURN]) == 0 {
				continue
			}
			if s := score(user, r.Node); best == nil || s > bestScore {
				best, bestScore = r, s
			}
		}
		if best != nil {
			turn = best.Services[ServiceTURN]
			if s := best.Services[ServiceSTUN]; len(s) > 0 {
				stun = s
			}
		}
	}
	var out []ICEServer
	if len(stun) > 0 {
		s := ICEServer{}
		for _, a := range stun {
			s.URLs = append(s.URLs, iceURL("stun", a))
		}
		out = append(out, s)
	}
	if len(turn) > 0 {
		s := ICEServer{}
		for _, a := range turn {
			s.URLs = append(s.URLs, iceURL("turn", a))
		}
		if p.cfg.TURNSecret != "" {
			s.Username, s.Credential = TURNCredentials(p.cfg.TURNSecret, user, p.cfg.TURNTTL, p.cfg.Now())
		}
		out = append(out, s)
	}
	return out
}

func addrs(a string) []string {
	if a == "" {
		return nil
	}
	return []string{a}
}
