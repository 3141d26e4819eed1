package redis

import goredis "github.com/redis/go-redis/v9"

// WithDial returns cfg with every dial of the clients Open makes passed
// through wrap, so that a test can cut them.
func WithDial(cfg Config, wrap func(next Dialer) Dialer) Config {
	cfg.dial = wrap
	return cfg
}

// Client returns b's go-redis client.
func Client(b *Backplane) goredis.UniversalClient { return b.rdb }
