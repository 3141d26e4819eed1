package config

// FederationHome is muster.federation.home: the settings of a federation
// home, read by `muster-home serve -config FILE` (and its MUSTER__FEDERATION__HOME__
// variables); a game server ignores them. Each maps to the field of the
// same name of federation.HomeConfig, whose documentation gives the
// rules; zero means that field's default. Behind a TLS proxy, home takes a
// client's address from muster.server.http.trusted-proxies and
// real-ip-header, as a game server does, so that each node has its own
// per-address budget.
type FederationHome struct {
	// AdminToken authorises the admin API, at least 16 bytes. Default "":
	// the admin API is off. Secret.
	AdminToken string `yaml:"admin-token"`
	// Services are home's own services, listed under "home" in the regions.
	Services FederationHomeServices `yaml:"services"`
	// AnnounceEvery is how often node servers are told to announce.
	// Default 60s.
	AnnounceEvery Duration `yaml:"announce-every"`
	// SilentAfter takes a silent server's node out of rotation. Default 3m.
	SilentAfter Duration `yaml:"silent-after"`
	// ReapAfter ends the rooms of a server silent that long. Default 1h.
	ReapAfter Duration `yaml:"reap-after"`
	// SelfTestEvery is the time from a passed self-test to the next one.
	// Default 24h.
	SelfTestEvery Duration `yaml:"self-test-every"`
	// SelfTestGrace is how long a due self-test may stay undone. Default 1h.
	SelfTestGrace Duration `yaml:"self-test-grace"`
	// SelfTestBytes is the size of the self-test upload. Default 4 MiB.
	SelfTestBytes int `yaml:"self-test-bytes"`
	// MinBandwidth is the upload rate (bytes a second) a self-test must
	// reach. Default 0: any complete upload passes.
	MinBandwidth float64 `yaml:"min-bandwidth"`
	// MaxBody bounds a request's JSON body. Default 64 KiB.
	MaxBody int `yaml:"max-body"`
	// MaxServersPerNode bounds the servers of one node. Default 64.
	MaxServersPerNode int `yaml:"max-servers-per-node"`
	// MaxRoomsPerServer bounds the open rooms one server reports.
	// Default 1000.
	MaxRoomsPerServer int `yaml:"max-rooms-per-server"`
	// MaxReportBytes bounds one room report. Default 16 KiB.
	MaxReportBytes int `yaml:"max-report-bytes"`
	// RegionsCache is how long the regions list is cached. Default 5s;
	// negative turns the cache off.
	RegionsCache Duration `yaml:"regions-cache"`
	// RequestTimeout bounds the register calls of one request. Default 2s.
	RequestTimeout Duration `yaml:"request-timeout"`
	// Limits are the doors' rate limits per window.
	Limits FederationHomeLimits `yaml:"limits"`
}

// FederationHomeServices are home's own services (empty: not listed).
type FederationHomeServices struct {
	// Game is home's own game server, such as wss://game.example.org/play.
	Game string `yaml:"game"`
	// TURN and STUN are home's own relays, host:port.
	TURN string `yaml:"turn"`
	STUN string `yaml:"stun"`
}

// FederationHomeLimits are federation.RateLimits: requests per Window;
// zero means the default, negative turns a limit off.
type FederationHomeLimits struct {
	// Window is the length of a window. Default 60s.
	Window Duration `yaml:"window"`
	// Join is joins per node key. Default 10.
	Join int `yaml:"join"`
	// Announce is announces per server key. Default 10.
	Announce int `yaml:"announce"`
	// Rooms is room reports per server key. Default 6000.
	Rooms int `yaml:"rooms"`
	// SelfTest is self-tests per server key. Default 2.
	SelfTest int `yaml:"self-test"`
	// PerIP is requests to the doors per client address (behind
	// trusted-proxies: the client's, not the proxy's). Default 60000.
	PerIP int `yaml:"per-ip"`
}
