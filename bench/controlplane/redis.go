package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// redisServer is a redis-server started for one fleet size: no
// persistence, a free loopback port, killed by stop (and by the kernel if
// this program dies first).
type redisServer struct {
	*testbin.Redis
	dir string
}

func startRedis(bin string) (*redisServer, error) {
	dir, err := os.MkdirTemp("", "muster-controlplane-")
	if err != nil {
		return nil, err
	}
	port, err := testbin.PickPort("127.0.0.1")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r, err := testbin.LaunchRedis(bin, dir, port)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &redisServer{Redis: r, dir: dir}, nil
}

// stop kills the server, waits for it and removes its directory.
func (r *redisServer) stop() {
	r.Stop()
	os.RemoveAll(r.dir)
}

// redisCounters are the cumulative INFO figures the table is made of.
type redisCounters struct {
	commands    int64   // total_commands_processed
	netIn       int64   // total_net_input_bytes
	netOut      int64   // total_net_output_bytes
	cpu         float64 // used_cpu_sys + used_cpu_user, seconds
	connections int64   // connected_clients
	byCommand   map[string]commandStat
	at          time.Time
}

// commandStat is one command's line of INFO commandstats.
type commandStat struct {
	calls int64
	usec  int64 // Redis's time in the command itself, µs
}

// sampleRedis reads INFO stats, cpu and clients.
func sampleRedis(ctx context.Context, rdb *goredis.Client) (redisCounters, error) {
	s, err := rdb.Info(ctx, "stats", "cpu", "clients", "commandstats").Result()
	if err != nil {
		return redisCounters{}, fmt.Errorf("INFO: %w", err)
	}
	c := redisCounters{at: time.Now(), byCommand: make(map[string]commandStat)}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "total_commands_processed":
			c.commands = n
		case "total_net_input_bytes":
			c.netIn = n
		case "total_net_output_bytes":
			c.netOut = n
		case "used_cpu_sys", "used_cpu_user":
			c.cpu += f
		case "connected_clients":
			c.connections = n
		}
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			var st commandStat
			for _, field := range strings.Split(v, ",") {
				fk, fv, _ := strings.Cut(field, "=")
				n, _ := strconv.ParseInt(fv, 10, 64)
				switch fk {
				case "calls":
					st.calls = n
				case "usec":
					st.usec = n
				}
			}
			c.byCommand[name] = st
		}
	}
	return c, sc.Err()
}
