package federation

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"time"

	"github.com/muster-gg/muster/internal/baseurl"
	"github.com/muster-gg/muster/internal/defaults"
)

// Defaults used for the zero fields of the configs.
const (
	DefaultAnnounceEvery     = time.Minute
	DefaultSilentAfter       = 3 * time.Minute
	DefaultReapAfter         = time.Hour
	DefaultSelfTestEvery     = 24 * time.Hour
	DefaultSelfTestGrace     = time.Hour
	DefaultSelfTestBytes     = 4 << 20 // 4 MiB
	DefaultMaxBody           = 64 << 10
	DefaultRegionsCache      = 5 * time.Second
	DefaultMaxServersPerNode = 64
	DefaultMaxRoomsPerServer = 1000
	DefaultMaxReportBytes    = 16 << 10
	DefaultRequestTimeout    = 2 * time.Second
	DefaultPollEvery         = time.Minute
	DefaultMaxStale          = 3 * time.Minute
	DefaultLookupTimeout     = 5 * time.Second
	DefaultLookupWorkers     = 4
	DefaultLookupQueue       = 1024
	DefaultCountryTTL        = 12 * time.Hour
	DefaultTURNTTL           = 12 * time.Hour
	DefaultNodeTimeout       = 10 * time.Second
	DefaultSelfTestTimeout   = 2 * time.Minute
)

// Service names with a meaning to Muster. A node may announce others; they
// are listed in the regions but placement ignores them.
const (
	// ServiceGame is the address of a node's game server: where rooms
	// placed on the node are played (host:port or a ws:// or wss:// URL).
	ServiceGame = "game"
	// ServicePhoton is the seed's name for a node's game server (for
	// Photon-compatible games); placement treats it as ServiceGame.
	ServicePhoton = "photon"
	// ServiceTURN is a node's TURN relay, host:port or a turn: URL.
	ServiceTURN = "turn"
	// ServiceSTUN is a node's STUN server, host:port or a stun: URL.
	ServiceSTUN = "stun"
)

// minAdminToken is the shortest admin token NewHome accepts.
const minAdminToken = 16

// HomeConfig configures a Home. The zero value of every field means its
// default; NewHome copies the struct.
type HomeConfig struct {
	// AdminToken authorises the admin API (/api/v1/admin/federation/...)
	// as a bearer token, at least 16 bytes. Default empty, which turns the
	// admin API off (every admin request gets 403); the Go methods
	// (CreateNode, Approve, ...) work either way.
	AdminToken string `yaml:"admin-token"`

	// Services are home's own services (game, turn, stun), listed under
	// "home" in GET /api/v1/regions. Default none.
	Services map[string]string `yaml:"services"`

	// AnnounceEvery is how often servers are told to announce. Default 1m.
	AnnounceEvery time.Duration `yaml:"announce-every"`

	// SilentAfter is how long after its last announce a server stops
	// counting: a node none of whose servers announced within SilentAfter
	// is out of rotation. Default 3m.
	SilentAfter time.Duration `yaml:"silent-after"`

	// ReapAfter is how long after its last announce a silent server's
	// rooms are kept: a server out of rotation (silent for SilentAfter)
	// still has its rooms found, counted and reported until they end or
	// its node or itself is revoked; after ReapAfter of silence they are
	// taken as abandoned and forgotten, and its reports refused
	// (not_announced) until it announces again. Default 1h; at least
	// SilentAfter.
	ReapAfter time.Duration `yaml:"reap-after"`

	// SelfTestEvery is the time from one passed bandwidth self-test to the
	// next one being due. Default 24h.
	SelfTestEvery time.Duration `yaml:"self-test-every"`

	// SelfTestGrace is how long a due self-test may stay undone: a server
	// whose self-test has been due for longer counts as silent. Default 1h.
	SelfTestGrace time.Duration `yaml:"self-test-grace"`

	// SelfTestBytes is the size of the self-test upload. Default 4 MiB.
	SelfTestBytes int64 `yaml:"self-test-bytes"`

	// MinBandwidth is the upload rate in bytes per second a self-test must
	// reach to pass. Default 0: any complete upload passes.
	MinBandwidth float64 `yaml:"min-bandwidth"`

	// MaxBody bounds the JSON body of every request. Default 64 KiB.
	MaxBody int64 `yaml:"max-body"`

	// MaxServersPerNode bounds the servers one node key can enrol (revoked
	// ones included). Default 64.
	MaxServersPerNode int `yaml:"max-servers-per-node"`

	// MaxRoomsPerServer bounds the open rooms one server may report; a
	// report of one more new room is refused (409 too_many_rooms) until
	// one closes. Default 1000.
	MaxRoomsPerServer int `yaml:"max-rooms-per-server"`

	// MaxReportBytes bounds the body of one room report; a larger one is
	// refused (413). Default 16 KiB; at most MaxBody.
	MaxReportBytes int64 `yaml:"max-report-bytes"`

	// RegionsCache is how long GET /api/v1/regions may serve a computed
	// list before reading the register again. Admin changes made through
	// this Home clear it at once. Default 5s; negative disables the cache.
	RegionsCache time.Duration `yaml:"regions-cache"`

	// RequestTimeout bounds the register calls of one request. Default 2s.
	RequestTimeout time.Duration `yaml:"request-timeout"`

	// Limits are the rate limits of the doors.
	Limits RateLimits `yaml:"limits"`

	// Now is the clock for rotation, schedules and rate-limit windows kept
	// in memory. Default time.Now. (Self-test rates are measured with the
	// monotonic clock whatever Now is.)
	Now func() time.Time `yaml:"-"`
}

// RateLimits are requests allowed per Window. Zero means the default; a
// negative value turns that limit off.
type RateLimits struct {
	// Window is the length of a rate-limit window. Default 1m.
	Window time.Duration `yaml:"window"`
	// Join is joins per node key. Default 10.
	Join int `yaml:"join"`
	// Announce is announces per server key. Default 10.
	Announce int `yaml:"announce"`
	// Rooms is room reports per server key. Default 6000.
	Rooms int `yaml:"rooms"`
	// SelfTest is self-tests per server key. Default 2.
	SelfTest int `yaml:"self-test"`
	// PerIP is requests to the federation doors (join, announce, self-test,
	// rooms) per client address, counted before the key is checked, so that
	// guessing keys costs the register little. Room reports count too:
	// raise it for a node with many busy servers behind one address.
	// Default 60000 (1000 a second). Behind a proxy, put a trusted real-IP
	// middleware in front of Handler.
	PerIP int `yaml:"per-ip"`
}

// DefaultHomeConfig returns the documented defaults: what NewHome uses for
// each zero field; a smaller MaxBody lowers MaxReportBytes's default to it.
func DefaultHomeConfig() HomeConfig {
	return HomeConfig{
		AnnounceEvery: DefaultAnnounceEvery, SilentAfter: DefaultSilentAfter, ReapAfter: DefaultReapAfter,
		SelfTestEvery: DefaultSelfTestEvery, SelfTestGrace: DefaultSelfTestGrace,
		RegionsCache: DefaultRegionsCache, RequestTimeout: DefaultRequestTimeout, SelfTestBytes: DefaultSelfTestBytes,
		MaxBody: DefaultMaxBody, MaxReportBytes: DefaultMaxReportBytes,
		MaxServersPerNode: DefaultMaxServersPerNode, MaxRoomsPerServer: DefaultMaxRoomsPerServer,
		Limits: RateLimits{Window: time.Minute, Join: 10, Announce: 10, Rooms: 6000, SelfTest: 2, PerIP: 60000},
	}
}

func (c HomeConfig) withDefaults() (HomeConfig, error) {
	d := DefaultHomeConfig()
	d.MaxReportBytes = min(d.MaxReportBytes, cmp.Or(c.MaxBody, d.MaxBody))
	defaults.Fill(&c, d)
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Services = cloneServices(c.Services)
	switch {
	case c.AdminToken != "" && len(c.AdminToken) < minAdminToken:
		return c, fmt.Errorf("%w: AdminToken must be at least %d bytes", ErrInvalidConfig, minAdminToken)
	case c.AnnounceEvery < 0, c.SilentAfter < 0, c.ReapAfter < 0, c.SelfTestEvery < 0, c.SelfTestGrace < 0, c.RequestTimeout < 0, c.Limits.Window < 0:
		return c, fmt.Errorf("%w: durations must not be negative", ErrInvalidConfig)
	case c.SilentAfter <= c.AnnounceEvery:
		return c, fmt.Errorf("%w: SilentAfter (%v) must be longer than AnnounceEvery (%v)", ErrInvalidConfig, c.SilentAfter, c.AnnounceEvery)
	case c.ReapAfter < c.SilentAfter:
		return c, fmt.Errorf("%w: ReapAfter (reap-after, %v) must be at least SilentAfter (%v)", ErrInvalidConfig, c.ReapAfter, c.SilentAfter)
	case c.SelfTestBytes < 0:
		return c, fmt.Errorf("%w: SelfTestBytes must not be negative", ErrInvalidConfig)
	case c.MaxBody < 1024:
		return c, fmt.Errorf("%w: MaxBody must be at least 1024", ErrInvalidConfig)
	case c.MaxServersPerNode < 0:
		return c, fmt.Errorf("%w: MaxServersPerNode must not be negative", ErrInvalidConfig)
	case c.MaxRoomsPerServer < 0:
		return c, fmt.Errorf("%w: MaxRoomsPerServer (max-rooms-per-server) must not be negative", ErrInvalidConfig)
	case c.MaxReportBytes < 256 || c.MaxReportBytes > c.MaxBody:
		return c, fmt.Errorf("%w: MaxReportBytes (max-report-bytes) must be 256 to MaxBody (%d)", ErrInvalidConfig, c.MaxBody)
	case c.MinBandwidth < 0:
		return c, fmt.Errorf("%w: MinBandwidth must not be negative", ErrInvalidConfig)
	}
	if err := validateServices(c.Services); err != nil {
		return c, fmt.Errorf("%w: Services: %w", ErrInvalidConfig, err)
	}
	return c, nil
}

// NodeConfig configures the Node agent that runs beside each server of a
// regional node. NewNode copies the struct.
type NodeConfig struct {
	// HomeURL is home's base URL, such as https://home.example.org.
	// Required.
	HomeURL string `yaml:"home-url"`

	// NodeKey is the node key an admin created at home. It is used once,
	// to enrol this server, and is required only while KeyFile holds no
	// server key.
	NodeKey string `yaml:"node-key"`

	// KeyFile is where the server key is kept (mode 0600); a restarted
	// agent reuses it instead of enrolling again. Required.
	KeyFile string `yaml:"key-file"`

	// Name labels this server at home. Default the host name.
	Name string `yaml:"name"`

	// Services are what this server runs, by name (ServiceGame,
	// ServiceTURN, ServiceSTUN): the addresses players are given.
	Services map[string]string `yaml:"services"`

	// AnnounceEvery is how often the server announces itself. Default 1m;
	// it must stay below home's SilentAfter (3m by default).
	AnnounceEvery time.Duration `yaml:"announce-every"`

	// Timeout bounds each request to home other than the self-test.
	// Default 10s.
	Timeout time.Duration `yaml:"timeout"`

	// SelfTestTimeout bounds the bandwidth self-test upload. Default 2m.
	SelfTestTimeout time.Duration `yaml:"self-test-timeout"`

	// HTTPClient makes the requests to home. Default a new http.Client
	// that follows no redirect.
	HTTPClient *http.Client `yaml:"-"`

	// Hardware reports this machine. Default ReadHardware.
	Hardware func() Hardware `yaml:"-"`

	// OnAnnounce, when set, is called from Run's goroutine after every
	// accepted announce with home's answer. It must not block.
	OnAnnounce func(Announcement) `yaml:"-"`
}

func (c NodeConfig) withDefaults() (NodeConfig, *url.URL, error) {
	setDefault(&c.AnnounceEvery, DefaultAnnounceEvery)
	setDefault(&c.SelfTestTimeout, DefaultSelfTestTimeout)
	if c.Hardware == nil {
		c.Hardware = ReadHardware
	}
	c.Services = cloneServices(c.Services)
	base, err := reachHome(c.HomeURL, &c.Timeout, &c.HTTPClient)
	if err != nil {
		return c, nil, err
	}
	switch {
	case c.KeyFile == "":
		return c, nil, fmt.Errorf("%w: KeyFile is required", ErrInvalidConfig)
	case c.AnnounceEvery < 0, c.Timeout < 0, c.SelfTestTimeout < 0:
		return c, nil, fmt.Errorf("%w: durations must not be negative", ErrInvalidConfig)
	case c.NodeKey != "" && !validKeyFormat(c.NodeKey, kindNode):
		return c, nil, fmt.Errorf("%w: NodeKey is not a node key", ErrInvalidConfig)
	}
	if c.Name != "" {
		if err := checkLabel("Name", c.Name); err != nil {
			return c, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	if err := validateServices(c.Services); err != nil {
		return c, nil, fmt.Errorf("%w: Services: %w", ErrInvalidConfig, err)
	}
	return c, base, nil
}

// PlacerConfig configures a Placer. The zero value of every field except
// HomeURL means its default; NewPlacer copies the struct.
type PlacerConfig struct {
	// HomeURL is the base URL of the home whose GET /api/v1/regions is
	// polled. Required.
	HomeURL string `yaml:"home-url"`

	// HomeServices are home's own services: ServiceGame is the address
	// rooms placed at home get, ServiceTURN and ServiceSTUN the relays of
	// players without a TURN node. Default none (a home placement then has
	// an empty address, which the caller reads as "here").
	HomeServices map[string]string `yaml:"home-services"`

	// PollEvery is how often the regions list is read. Default 1m.
	PollEvery time.Duration `yaml:"poll-every"`

	// MaxStale is how long a regions list is used after polls start to
	// fail; past it every room goes home. Default 3m.
	MaxStale time.Duration `yaml:"max-stale"`

	// Resolver looks up a player's country at sign-in. Default none: every
	// room is placed at home.
	Resolver CountryResolver `yaml:"-"`

	// LookupTimeout bounds one country lookup. Default 5s.
	LookupTimeout time.Duration `yaml:"lookup-timeout"`

	// LookupWorkers is how many lookups run at once. Default 4.
	LookupWorkers int `yaml:"lookup-workers"`

	// LookupQueue is how many sign-ins may wait for a lookup; past it a
	// sign-in is not looked up and the player's rooms go home. Default 1024.
	LookupQueue int `yaml:"lookup-queue"`

	// CountryTTL is how long a looked-up country is kept without a new
	// sign-in. Default 12h.
	CountryTTL time.Duration `yaml:"country-ttl"`

	// TURNSecret is coturn's static-auth-secret; when set, ICEServers
	// mints credentials for the TURN servers it returns. Default empty.
	TURNSecret string `yaml:"turn-secret"`

	// TURNTTL is the lifetime of minted TURN credentials. Default 12h.
	TURNTTL time.Duration `yaml:"turn-ttl"`

	// Timeout bounds one poll. Default 10s.
	Timeout time.Duration `yaml:"timeout"`

	// HTTPClient polls home. Default a new http.Client that follows no
	// redirect.
	HTTPClient *http.Client `yaml:"-"`

	// Now is the clock. Default time.Now.
	Now func() time.Time `yaml:"-"`
}

// DefaultPlacerConfig returns the documented defaults: what NewPlacer
// uses for each zero field.
func DefaultPlacerConfig() PlacerConfig {
	return PlacerConfig{
		PollEvery: DefaultPollEvery, MaxStale: DefaultMaxStale, LookupTimeout: DefaultLookupTimeout,
		CountryTTL: DefaultCountryTTL, TURNTTL: DefaultTURNTTL, Timeout: DefaultNodeTimeout,
		LookupWorkers: DefaultLookupWorkers, LookupQueue: DefaultLookupQueue,
	}
}

func (c PlacerConfig) withDefaults() (PlacerConfig, *url.URL, error) {
	defaults.Fill(&c, DefaultPlacerConfig())
	if c.Now == nil {
		c.Now = time.Now
	}
	c.HomeServices = cloneServices(c.HomeServices)
	base, err := reachHome(c.HomeURL, &c.Timeout, &c.HTTPClient)
	if err != nil {
		return c, nil, err
	}
	switch {
	case c.PollEvery < 0, c.MaxStale < 0, c.LookupTimeout < 0, c.CountryTTL < 0, c.TURNTTL < 0, c.Timeout < 0:
		return c, nil, fmt.Errorf("%w: durations must not be negative", ErrInvalidConfig)
	case c.LookupWorkers < 0:
		return c, nil, fmt.Errorf("%w: LookupWorkers must not be negative", ErrInvalidConfig)
	case c.LookupQueue < 0:
		return c, nil, fmt.Errorf("%w: LookupQueue must not be negative", ErrInvalidConfig)
	}
	if err := validateServices(c.HomeServices); err != nil {
		return c, nil, fmt.Errorf("%w: HomeServices: %w", ErrInvalidConfig, err)
	}
	return c, base, nil
}

// reachHome fills in what a Node and a Placer alike need to reach home:
// the bound of one request (default DefaultNodeTimeout) and the HTTP
// client (default one that follows no redirect). It returns home's base
// URL, parsed and checked.
func reachHome(homeURL string, timeout *time.Duration, client **http.Client) (*url.URL, error) {
	setDefault(timeout, DefaultNodeTimeout)
	if *client == nil {
		*client = newHomeClient()
	}
	base, err := homeBaseURL(homeURL)
	if err != nil {
		return nil, fmt.Errorf("%w: HomeURL: %w", ErrInvalidConfig, err)
	}
	return base, nil
}

// homeBaseURL parses and checks home's base URL (baseurl.Valid): the
// paths of home's API are joined to it.
func homeBaseURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, fmt.Errorf("is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New("is not a URL")
	}
	if !baseurl.Valid(u) {
		return nil, fmt.Errorf("%s: want an http(s) base URL without user, query or fragment; home's keys are sent as headers", u.Redacted())
	}
	return u, nil
}

// cloneServices returns a copy of services, never nil.
func cloneServices(services map[string]string) map[string]string {
	out := make(map[string]string, len(services))
	maps.Copy(out, services)
	return out
}

// setDefault sets *v to def when it is zero.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// componentLogger returns logger (or slog.Default) with the component.
func componentLogger(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		logger = slog.Default()
	}
	return logger.With("component", "federation")
}
