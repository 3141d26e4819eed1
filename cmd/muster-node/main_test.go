package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/federation"
	"github.com/muster-gg/muster/internal/testkit/fedtest"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAgent: the agent joins once and keeps the key, announces the seed's
// services, reuses the key when run again, and stops with status 3 when
// revoked.
func TestAgent(t *testing.T) {
	fh, err := federation.NewHome(federation.HomeConfig{}, memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	home := fedtest.Serve(t, fh)
	ctx := context.Background()
	nodeKey := home.ApprovedNode(t, "au-sydney", "AU")
	keyFile := filepath.Join(t.TempDir(), "server-key")
	args := []string{"-home", home.URL, "-key-file", keyFile, "-announce-every", "20ms",
		"-service", "photon=203.0.113.9:22002", "-service", "turn=203.0.113.9:3478,stun=203.0.113.9:3478"}

	start := func(args ...string) (context.CancelFunc, chan int, *testbin.Buffer) {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan int, 1)
		var out testbin.Buffer
		go func() { done <- run(runCtx, args, &out) }()
		return cancel, done, &out
	}
	servers := func() []federation.ServerInfo {
		n, err := home.Node(ctx, "au-sydney")
		if err != nil {
			t.Fatal(err)
		}
		return n.Servers
	}

	cancel, done, out := start(append(args, "-node-key", nodeKey)...)
	fedtest.WaitFor(t, "the first announce", func() bool {
		s := servers()
		return len(s) == 1 && s[0].Services["photon"] == "203.0.113.9:22002" && s[0].Services["stun"] != ""
	})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if strings.Contains(out.String(), nodeKey) {
		t.Fatal("the node key is in the log")
	}

	// Again without the node key: the kept server key, no new server.
	cancel, done, out = start(args...)
	before := servers()[0].LastSeen
	fedtest.WaitFor(t, "an announce with the kept key", func() bool { return servers()[0].LastSeen.After(before) })
	if len(servers()) != 1 {
		t.Fatalf("servers after a restart: %+v", servers())
	}
	if err := home.RevokeServer(ctx, servers()[0].ID); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 3 || !strings.Contains(out.String(), "refuses this server") {
		t.Fatalf("after revocation: exit %d: %s", code, out)
	}
	cancel()

	if code := run(ctx, []string{"-home", home.URL}, &testbin.Buffer{}); code != 2 {
		t.Fatalf("without a key file: exit %d", code)
	}
	if code := run(ctx, []string{"-service", "photon"}, &testbin.Buffer{}); code != 2 {
		t.Fatalf("a service without an address: exit %d", code)
	}
}

// FuzzServicesFlag: the -service parser never panics, and what it keeps
// is name=address pairs with both parts non-empty.
func FuzzServicesFlag(f *testing.F) {
	for _, s := range []string{"photon=203.0.113.9:22002", "turn=a:1,stun=a:1", "", ",", "=", "a=", "=b", "a=b=c", " a = b , c=d "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s := services{}
		if err := s.Set(v); err != nil {
			return
		}
		for name, addr := range s {
			if name == "" || addr == "" {
				t.Fatalf("%q kept %q=%q", v, name, addr)
			}
		}
	})
}
