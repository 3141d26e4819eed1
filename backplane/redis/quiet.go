package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis logs every failed dial through its package-level logger, many
// lines a second while Redis is away. The fleet reports an outage once,
// with its cause, so the package silences that logger when it is loaded;
// a program that wants go-redis's own lines back calls goredis.SetLogger
// after importing this package.
func init() { goredis.SetLogger(quiet{}) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
