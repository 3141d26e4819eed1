package federation

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// newLiveEnv is an env on the real clock, which inside a synctest bubble
// is the bubble's fake one.
func newLiveEnv(t *testing.T) *env {
	t.Helper()
	home, err := NewHome(HomeConfig{AdminToken: adminToken, RegionsCache: -1}, memory.New(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, bp: home.bp, home: home, h: home.Handler()}
}

// agent runs a Node against e's home in process.
type agent struct {
	*Node
	mu        sync.Mutex
	announces []Announcement
	run       *testrun.Running
}

func (a *agent) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.announces)
}

func startAgent(t *testing.T, e *env, cfg NodeConfig, tr http.RoundTripper) *agent {
	t.Helper()
	a := &agent{}
	cfg.HomeURL = "http://home.test"
	if tr == nil {
		tr = handlerTransport{h: e.h}
	}
	cfg.HTTPClient = &http.Client{Transport: tr}
	cfg.OnAnnounce = func(ann Announcement) {
		a.mu.Lock()
		a.announces = append(a.announces, ann)
		a.mu.Unlock()
	}
	n, err := NewNode(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	a.Node = n
	a.run = testrun.Start(t, n.Run)
	return a
}

// startNodeAgent starts an agent (see startAgent) of a new approved node,
// au-sydney, with a key file of its own.
func startNodeAgent(t *testing.T, e *env, tr http.RoundTripper) *agent {
	t.Helper()
	return startAgent(t, e, NodeConfig{NodeKey: e.createNode("au-sydney", "AU", true), KeyFile: filepath.Join(t.TempDir(), "k")}, tr)
}

func TestNodeJoinsOnceAndReusesKey(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newLiveEnv(t)
		nodeKey := e.createNode("au-sydney", "AU", true)
		keyFile := filepath.Join(t.TempDir(), "server.key")
		cfg := NodeConfig{
			NodeKey: nodeKey, KeyFile: keyFile, Name: "syd-1",
			Services: map[string]string{ServiceGame: "wss://syd-1.example/play"},
		}
		a := startAgent(t, e, cfg, nil)
		synctest.Wait()

		fi, err := os.Stat(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
		}
		data, _ := os.ReadFile(keyFile)
		if !strings.Contains(string(data), serverKeyPrefix) {
			t.Fatalf("key file holds %s", data)
		}
		n, err := e.home.Node(context.Background(), "au-sydney")
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Servers) != 1 || n.Servers[0].Name != "syd-1" || n.Servers[0].ID != a.ServerID() {
			t.Fatalf("servers %+v", n.Servers)
		}
		s := n.Servers[0]
		if !s.Fresh || s.SelfTest == nil || !s.SelfTest.Passed || s.Hardware.CPUs == 0 || s.Hardware.OS == "" {
			t.Fatalf("server after the first step: %+v", s)
		}
		if got := regionNodes(e.regions()); !slices.Equal(got, []string{"au-sydney"}) {
			t.Fatalf("regions %v", got)
		}

		// Once a minute.
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		if c := a.count(); c != 4 {
			t.Fatalf("%d announces in 3 minutes, want 4", c)
		}
		if err := a.run.Stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}

		// A restart reuses the key: no second server, no node key needed.
		cfg.NodeKey = ""
		b := startAgent(t, e, cfg, nil)
		synctest.Wait()
		if b.count() != 1 || b.ServerID() != a.ServerID() {
			t.Fatalf("restart: %d announces as %q, want 1 as %q", b.count(), b.ServerID(), a.ServerID())
		}
		if n, _ := e.home.Node(context.Background(), "au-sydney"); len(n.Servers) != 1 {
			t.Fatalf("restart enrolled again: %+v", n.Servers)
		}
	})
}

func TestNodeStopsWhenRevoked(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newLiveEnv(t)
		a := startNodeAgent(t, e, nil)
		synctest.Wait()
		if err := e.home.RevokeServer(context.Background(), a.ServerID()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if err := a.run.Wait(); !errors.Is(err, ErrRevoked) {
			t.Fatalf("Run after revocation: %v", err)
		}
	})
}

func TestNodeRetriesWhileHomeIsDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newLiveEnv(t)
		var down atomic.Bool
		down.Store(true)
		tr := handlerTransport{h: e.h, drop: func(*http.Request) bool { return down.Load() }}
		a := startNodeAgent(t, e, tr)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if a.ServerID() != "" {
			t.Fatal("joined while home was down")
		}
		down.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		if a.ServerID() == "" || a.count() == 0 {
			t.Fatal("not joined a minute after home came back")
		}
		// Announces that fail are retried at the next tick.
		down.Store(true)
		time.Sleep(5 * time.Minute)
		down.Store(false)
		before := a.count()
		time.Sleep(time.Minute)
		synctest.Wait()
		if a.count() != before+1 {
			t.Fatalf("announces: %d then %d", before, a.count())
		}
	})
}

func TestNodeConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  NodeConfig
	}{
		{"no home", NodeConfig{KeyFile: "k"}},
		{"home not http", NodeConfig{HomeURL: "ftp://x", KeyFile: "k"}},
		{"home with a query", NodeConfig{HomeURL: "https://x/?a=b", KeyFile: "k"}},
		{"home with a bare ?", NodeConfig{HomeURL: "https://x/?", KeyFile: "k"}},
		{"home with a fragment", NodeConfig{HomeURL: "https://x/#a", KeyFile: "k"}},
		{"home with a password", NodeConfig{HomeURL: "https://u:hunter2@x/", KeyFile: "k"}},
		{"no key file", NodeConfig{HomeURL: "http://x"}},
		{"server key as node key", NodeConfig{HomeURL: "http://x", KeyFile: "k", NodeKey: newKey(kindServer)}},
		{"bad service", NodeConfig{HomeURL: "http://x", KeyFile: "k", Services: map[string]string{"a b": "x"}}},
	}
	for _, tt := range tests {
		if _, err := NewNode(tt.cfg, nil); !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	// Neither a key file nor a node key: Run says so.
	n, err := NewNode(NodeConfig{HomeURL: "http://127.0.0.1:1", KeyFile: filepath.Join(dir, "none")}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(context.Background()); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Run without any key: %v", err)
	}
	if err := n.ReportRoom(context.Background(), RoomReport{RoomID: "r"}); !errors.Is(err, ErrNotJoined) {
		t.Fatalf("ReportRoom before joining: %v", err)
	}
	// A key file readable by others is made private on load.
	loose := filepath.Join(dir, "loose")
	os.WriteFile(loose, []byte(`{"node_id":"a","server_id":"a-1","server_key":"`+newKey(kindServer)+`"}`), 0o644)
	n, _ = NewNode(NodeConfig{HomeURL: "http://127.0.0.1:1", KeyFile: loose}, quiet())
	if _, err := n.loadKey(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o600 {
		t.Fatalf("loose key file left %v", fi.Mode().Perm())
	}
}

// TestNodeRoomReports: a report that does not arrive is corrected by the
// next one, and an unacknowledged one is resent with the next announce.
func TestNodeRoomReports(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newLiveEnv(t)
		var drop atomic.Bool
		tr := handlerTransport{h: e.h, drop: func(r *http.Request) bool {
			return drop.Load() && r.URL.Path == PathRooms
		}}
		a := startNodeAgent(t, e, tr)
		synctest.Wait()
		ctx := context.Background()

		members := []string{"alice"}
		if err := a.ReportRoom(ctx, RoomReport{RoomID: "r1", Members: members}); err != nil {
			t.Fatal(err)
		}
		members[0] = "mallory" // the caller's slice is not kept
		drop.Store(true)
		if err := a.ReportRoom(ctx, RoomReport{RoomID: "r1", Members: []string{"alice", "bob"}}); err == nil {
			t.Fatal("dropped report returned nil")
		}
		if got := e.room("r1"); !slices.Equal(got, []string{"alice"}) {
			t.Fatalf("home after a dropped report: %v", got)
		}
		drop.Store(false)
		if err := a.ReportRoom(ctx, RoomReport{RoomID: "r1", Members: []string{"alice", "bob", "carol"}}); err != nil {
			t.Fatal(err)
		}
		if got := e.room("r1"); !slices.Equal(got, []string{"alice", "bob", "carol"}) {
			t.Fatalf("home after the next report: %v", got)
		}

		// No next change: the next announce resends it.
		drop.Store(true)
		a.ReportRoom(ctx, RoomReport{RoomID: "r2", Members: []string{"dave"}, Properties: map[string]string{"map": "dust"}})
		a.ReportRoom(ctx, RoomReport{RoomID: "r1", Closed: true})
		drop.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := e.room("r2"); !slices.Equal(got, []string{"dave"}) {
			t.Fatalf("r2 after the next announce: %v", got)
		}
		if got := e.room("r1"); got != nil {
			t.Fatalf("r1 closed but home has %v", got)
		}
		a.Node.mu.Lock()
		pending := len(a.Node.pending)
		a.Node.mu.Unlock()
		if pending != 0 {
			t.Fatalf("%d reports still pending", pending)
		}
	})
}

// The paths of home's API go under its base URL's path, and a redirect of
// home is not followed: Go's client would carry the key to another port
// of the same host, or from https to plain http.
func TestNodeCallsHomeUnderItsPathAndFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write([]byte(`{"stored":true}`))
	}))
	t.Cleanup(other.Close)
	var paths sync.Map
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths.Store(r.URL.Path, true)
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(home.Close)
	n, err := NewNode(NodeConfig{HomeURL: home.URL + "/muster/", KeyFile: filepath.Join(t.TempDir(), "key")}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(kindServer)
	var res roomResponse
	err = n.postJSON(t.Context(), PathRooms, key, report("r1", 1, "a"), &res)
	var he *HomeError
	if !errors.As(err, &he) || he.Status != http.StatusTemporaryRedirect {
		t.Errorf("a redirect of home: %v, want a HomeError with status 307", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
	if _, ok := paths.Load("/muster" + PathRooms); !ok {
		t.Errorf("home was not asked for /muster%s", PathRooms)
	}
}
