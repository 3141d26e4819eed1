package muster_test

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/internal/testkit/playtest"
	"github.com/muster-gg/muster/internal/testkit/testrun"
	"github.com/muster-gg/muster/room"
)

// welcomeFields returns the fields docs/protocol.md gives the welcome
// packet, each with its row's text.
func welcomeFields(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "#### `welcome`\n")
	if !ok {
		t.Fatal("docs/protocol.md has no #### `welcome` section")
	}
	section, _, _ = strings.Cut(section, "\n#### ")
	fields := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\w+)` \\| (.*) \\|$").FindAllStringSubmatch(section, -1) {
		fields[m[1]] = m[2]
	}
	if len(fields) < 3 {
		t.Fatalf("docs/protocol.md's welcome table has the fields %v: the parse is broken", fields)
	}
	return fields
}

// checkWelcome fails the test unless w has only fields the protocol
// documents (and its type), and every field it does not mark optional.
func checkWelcome(t *testing.T, mode string, w map[string]any, fields map[string]string) {
	t.Helper()
	for k := range w {
		if _, ok := fields[k]; !ok && k != "type" {
			t.Errorf("%s: the welcome has the field %q, which docs/protocol.md does not document: %v", mode, k, w)
		}
	}
	for k, text := range fields {
		if _, ok := w[k]; !ok && !strings.Contains(text, "*optional*") {
			t.Errorf("%s: the welcome lacks %q, which docs/protocol.md does not mark optional: %v", mode, k, w)
		}
	}
}

// The welcome is what docs/protocol.md says in every mode: a server that
// muster.New assembles names its node, on the in-memory backplane as in a
// fleet, and only a room host with no fleet bound leaves node out, as the
// protocol's row for node says.
func TestWelcomeMatchesProtocol(t *testing.T) {
	fields := welcomeFields(t)
	node := fields["node"]
	for _, says := range []string{"*optional*", "in-memory", "room.Host"} {
		if !strings.Contains(node, says) {
			t.Errorf("docs/protocol.md's row for the welcome's node does not say %q: %s", says, node)
		}
	}

	t.Run("in memory", func(t *testing.T) {
		s := startServer(t, muster.DefaultConfig())
		c := playtest.DialPlayer(t, "http://"+s.addr, s.Tickets(), "ann", "")
		w := welcome(t, c, "ann")
		checkWelcome(t, "in memory", w, fields)
		if w["node"] != s.NodeID() {
			t.Errorf("welcome %v, want node %q", w, s.NodeID())
		}
	})

	t.Run("fleet", func(t *testing.T) {
		store := memory.NewStore(memory.Config{})
		var servers []*testServer
		for _, id := range []string{"wa", "wb"} {
			cfg := muster.DefaultConfig()
			cfg.Security.Key = "0123456789abcdef0123456789abcdef"
			cfg.Server.Fleet.NodeID = id
			cfg.Server.Fleet.Heartbeat = config.Duration(100 * time.Millisecond)
			bp, err := store.Cluster(cfg.Server.Fleet.Cluster)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { bp.Close() }) // once the server has stopped
			l := loopback(t)
			cfg.Server.Fleet.InternalAddress = l.Addr().String()
			servers = append(servers, start(t, Counter{}, cfg, l, quiet, muster.WithBackplane(bp)))
		}
		seesReady(t, servers[0], servers[1])
		for _, s := range servers {
			c := playtest.DialPlayer(t, "http://"+s.addr, s.Tickets(), "bob", "")
			w := welcome(t, c, "bob")
			checkWelcome(t, "fleet", w, fields)
			if w["node"] != s.NodeID() {
				t.Errorf("welcome %v, want node %q", w, s.NodeID())
			}
			c.Close(1000, "")
		}
	})

	t.Run("room host without a fleet", func(t *testing.T) {
		h, err := room.New[*int, int, string](Counter{}, room.Config{Secret: "0123456789abcdef0123456789abcdef"}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		testrun.GoRun(t, h.Run)
		<-h.Started()
		srv := httptest.NewServer(h.Handler())
		t.Cleanup(srv.Close)
		w := welcome(t, playtest.DialPlayer(t, srv.URL, h.Tickets(), "cat", ""), "cat")
		checkWelcome(t, "room host", w, fields)
		if _, ok := w["node"]; ok {
			t.Errorf("welcome %v from a host without a fleet, want no node", w)
		}
	})
}
