package muster

import (
	"fmt"
	"strings"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/backplane/redis"
	"github.com/muster-gg/muster/config"
)

// openBackplane opens the backplane muster.server.fleet.redis names, or an
// in-memory one when it is empty. It does not wait for Redis. The caller
// closes it.
func openBackplane(c config.Config) (backplane.Backplane, error) {
	if c.Server.Fleet.Redis == "" {
		b, err := memory.NewStore(memory.Config{}).Cluster(c.Server.Fleet.Cluster)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	b, err := redis.Open(redisConfig(c))
	if err != nil {
		// The client's own errors may quote the URL, password and all.
		msg := strings.ReplaceAll(err.Error(), c.Server.Fleet.Redis, config.RedactURL(c.Server.Fleet.Redis))
		return nil, fmt.Errorf("config: muster.server.fleet.redis / MUSTER__SERVER__FLEET__REDIS: %s", msg)
	}
	return b, nil
}
