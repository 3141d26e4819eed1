package testbin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisOptions configures StartRedisWith.
type RedisOptions struct {
	// Password is the default user's password (requirepass), and the one
	// a replica gives its master (masterauth). "" for none.
	Password string
	// Users are ACL users, each the words of a user directive, such as
	// "app on >secret ~* &* +@all".
	Users []string
	// TLS, when set, makes the server speak TLS only, with a certificate
	// from this CA.
	TLS *CA
	// ClientCerts makes a TLS server require a client certificate signed
	// by its CA (mutual TLS).
	ClientCerts bool
	// Args are more redis-server arguments.
	Args []string
	// Bin is the server program to run instead of redis-server: the path
	// of a compatible server, such as valkey-server. "" for redis-server.
	Bin string
}

// StartRedisWith starts a redis-server as StartRedis does, configured by o.
func StartRedisWith(tb testing.TB, o RedisOptions) *Redis {
	tb.Helper()
	r := newRedis(tb, o)
	if err := r.launch(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Stop)
	return r
}

// newRedis prepares a server on a free port without starting it.
func newRedis(tb testing.TB, o RedisOptions) *Redis {
	tb.Helper()
	bin := o.Bin
	if bin == "" {
		bin = Need(tb, "redis-server")
	}
	r := &Redis{tb: tb, bin: bin, dir: tb.TempDir()}
	r.port = FreePort(tb, "127.0.0.1")
	r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
	if o.Password != "" {
		r.args = append(r.args, "--requirepass", o.Password, "--masterauth", o.Password)
	}
	for _, u := range o.Users {
		r.args = append(r.args, "--user")
		r.args = append(r.args, strings.Fields(u)...)
	}
	if o.TLS != nil {
		cert, key := o.TLS.Issue(tb, "redis-"+strconv.Itoa(r.port))
		auth := "no"
		if o.ClientCerts {
			auth = "yes"
		}
		r.args = append(r.args, "--port", "0", "--tls-port", strconv.Itoa(r.port),
			"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", o.TLS.CertFile,
			"--tls-auth-clients", auth, "--tls-replication", "yes")
	}
	r.args = append(r.args, o.Args...)
	return r
}

// launchAll starts servers in parallel and waits for them all.
func launchAll(tb testing.TB, rs []*Redis) {
	tb.Helper()
	if err := tryLaunchAll(tb, rs); err != nil {
		tb.Fatal(err)
	}
}

// tryLaunchAll is launchAll returning its error: the servers started are
// stopped when the test ends.
func tryLaunchAll(tb testing.TB, rs []*Redis) error {
	tb.Helper()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { errs[i] = r.launch() })
	}
	wg.Wait()
	for _, r := range rs {
		tb.Cleanup(r.Stop)
	}
	return errors.Join(errs...)
}

// SentinelGroup is a master, its replica and three sentinels, started for
// a test with passwords on all of them.
type SentinelGroup struct {
	// MasterName is the name the sentinels know the master by.
	MasterName string
	// Password is the data servers' default-user password.
	Password string
	// SentinelPassword is the sentinels' own password.
	SentinelPassword string
	// Master and Replica are the data servers as started; after a
	// failover they have swapped roles.
	Master, Replica *Redis
	// Sentinels are the three sentinels.
	Sentinels []*Redis
}

// StartSentinelGroup starts a master, a replica and three sentinels with
// passwords, in parallel, and returns once every sentinel knows the
// replica and the other sentinels, so that a failover can happen. Failure
// is detected after one second.
func StartSentinelGroup(tb testing.TB) *SentinelGroup {
	tb.Helper()
	g := &SentinelGroup{MasterName: "muster", Password: "data-pw", SentinelPassword: "sentinel-pw"}
	g.Master = newRedis(tb, RedisOptions{Password: g.Password})
	g.Replica = newRedis(tb, RedisOptions{Password: g.Password})
	g.Replica.args = append(g.Replica.args, "--replicaof", "127.0.0.1", strconv.Itoa(g.Master.port),
		"--replica-announce-ip", "127.0.0.1")
	g.Master.args = append(g.Master.args, "--replica-announce-ip", "127.0.0.1")
	launchAll(tb, []*Redis{g.Master, g.Replica})
	for range 3 {
		s := newRedis(tb, RedisOptions{})
		s.conf = filepath.Join(s.dir, "sentinel.conf")
		conf := fmt.Sprintf(`sentinel announce-ip 127.0.0.1
sentinel monitor %[1]s 127.0.0.1 %[2]d 2
sentinel auth-pass %[1]s %[3]s
sentinel down-after-milliseconds %[1]s 1000
sentinel failover-timeout %[1]s 2000
requirepass %[4]s
sentinel sentinel-pass %[4]s
`, g.MasterName, g.Master.port, g.Password, g.SentinelPassword)
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			tb.Fatal(err)
		}
		s.sentinel = true
		g.Sentinels = append(g.Sentinels, s)
	}
	launchAll(tb, g.Sentinels)
	g.waitReady(tb)
	return g
}

// SentinelAddrs returns the sentinels' addresses.
func (g *SentinelGroup) SentinelAddrs() []string {
	var out []string
	for _, s := range g.Sentinels {
		out = append(out, s.Addr)
	}
	return out
}

func (g *SentinelGroup) waitReady(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range g.Sentinels {
		c := goredis.NewClient(&goredis.Options{Addr: s.Addr, Password: g.SentinelPassword, DisableIdentity: true})
		err := poll(ctx, func() (bool, error) {
			replicas, err := c.Do(ctx, "SENTINEL", "REPLICAS", g.MasterName).Slice()
			if err != nil {
				return false, err
			}
			others, err := c.Do(ctx, "SENTINEL", "SENTINELS", g.MasterName).Slice()
			return len(replicas) == 1 && len(others) == 2, err
		})
		c.Close()
		if err != nil {
			tb.Fatalf("sentinel %s never saw the replica and the other sentinels: %v\n%s", s.Addr, err, s.out.String())
		}
	}
}

// RedisCluster is a Redis Cluster of three masters and three replicas,
// started for a test with a password.
type RedisCluster struct {
	// Password is every node's default-user password.
	Password string
	// Nodes are the six nodes: masters first, then each one's replica.
	Nodes []*Redis
}

// ClusterOptions configures StartRedisCluster.
type ClusterOptions struct {
	// NodeTimeout is the cluster-node-timeout: how long a node may not
	// answer before the others fail it over. Default 1 s, which a failover
	// measurement wants; a test of the calls themselves wants longer, so
	// that a starved machine does not fail a node over in the middle
	// (CLUSTERDOWN for every call until the cluster is whole again).
	NodeTimeout time.Duration
}

// StartRedisCluster starts a Redis Cluster of three masters, each with one
// replica, nodes in parallel, and returns once every node reports the
// cluster ok with all six nodes.
func StartRedisCluster(tb testing.TB, o ClusterOptions) *RedisCluster {
	tb.Helper()
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = time.Second
	}
	rc := &RedisCluster{Password: "cluster-pw"}
	bus := make([]int, 6)
	// Twelve ports are picked free and bound a moment later, by programs
	// of their own: another test's server may take one in between (a CI
	// run: "Failed listening on port … (cluster), aborting"). The nodes
	// are started again on new ports then, a few times at most.
	for try := 1; ; try++ {
		rc.Nodes = nil
		for i := range 6 {
			r := newRedis(tb, RedisOptions{Password: rc.Password})
			bus[i] = FreePort(tb, "127.0.0.1")
			r.args = append(r.args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10), "--cluster-port", strconv.Itoa(bus[i]),
				"--cluster-announce-ip", "127.0.0.1", "--cluster-replica-validity-factor", "0")
			rc.Nodes = append(rc.Nodes, r)
		}
		err := tryLaunchAll(tb, rc.Nodes)
		if err == nil {
			break
		}
		for _, r := range rc.Nodes {
			r.Stop()
		}
		if try == 3 || !strings.Contains(err.Error(), "Address already in use") {
			tb.Fatal(err)
		}
		tb.Logf("redis cluster: a port was taken before its node bound it; starting the nodes again: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := make([]*goredis.Client, 6)
	for i, n := range rc.Nodes {
		clients[i] = goredis.NewClient(&goredis.Options{Addr: n.Addr, Password: rc.Password, DisableIdentity: true})
		defer clients[i].Close()
	}
	fail := func(step string, err error) {
		tb.Helper()
		tb.Fatalf("redis cluster: %s: %v", step, err)
	}
	for i := 1; i < 6; i++ {
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", rc.Nodes[i].port, bus[i]).Err(); err != nil {
			fail("meet", err)
		}
	}
	for i := range 3 {
		lo, hi := i*16384/3, (i+1)*16384/3-1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			fail("add slots", err)
		}
	}
	err := poll(ctx, func() (bool, error) {
		for _, c := range clients {
			nodes, err := c.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(nodes, "\n") < 6 || strings.Contains(nodes, "handshake") {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		fail("meet all", err)
	}
	for i := 3; i < 6; i++ {
		id, err := clients[i-3].Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			fail("myid", err)
		}
		if err := clients[i].Do(ctx, "CLUSTER", "REPLICATE", id).Err(); err != nil {
			fail("replicate", err)
		}
	}
	if err := rc.WaitOK(ctx); err != nil {
		fail("state ok", err)
	}
	return rc
}

// WaitOK waits until every running node reports the cluster ok and each
// of the three slot ranges has a master.
func (rc *RedisCluster) WaitOK(ctx context.Context) error {
	return poll(ctx, func() (bool, error) {
		for _, n := range rc.Nodes {
			if n.cmd == nil {
				continue
			}
			c := goredis.NewClient(&goredis.Options{Addr: n.Addr, Password: rc.Password, DisableIdentity: true})
			info, err := c.ClusterInfo(ctx).Result()
			var slots []goredis.ClusterSlot
			if err == nil {
				slots, err = c.ClusterSlots(ctx).Result()
			}
			c.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || len(slots) != 3 {
				return false, err
			}
			for _, s := range slots {
				if len(s.Nodes) < 2 {
					return false, nil // a replica not yet synced
				}
			}
		}
		return true, nil
	})
}

// Seed returns the address of one node, through which a client finds the
// rest.
func (rc *RedisCluster) Seed() string { return rc.Nodes[0].Addr }

// poll calls ready every 50 ms until it reports true or ctx ends; the
// last error is returned with ctx's.
func poll(ctx context.Context, ready func() (bool, error)) error {
	var last error
	for {
		ok, err := ready()
		if ok && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
