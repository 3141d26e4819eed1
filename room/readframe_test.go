package room

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

// stash is a module that keeps the bodies of the "stash" messages it is
// given, and answers each.
type stash struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (s *stash) Attach(ModuleHost) error { return nil }

func (s *stash) MessageTypes() []string { return []string{"stash"} }

func (s *stash) HandleMessage(_ context.Context, c *Client, _ string, body []byte) error {
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	c.Send(map[string]string{"type": "stashed"})
	return nil
}

// TestModuleKeepsItsBody: the read loop reads every message into the
// connection's one buffer; a module that keeps a body it was given still
// has it as it was once later messages have been read into that buffer.
func TestModuleKeepsItsBody(t *testing.T) {
	h := newHost(t, newCounter(), Config{})
	s := &stash{}
	if err := h.Use(s); err != nil {
		t.Fatal(err)
	}
	runHost(t, h)
	srv := newServer(t, h)
	c := playtest.DialPlayer(t, srv.URL, h.Tickets(), "p1", "")
	c.Welcome("new")
	const n = 5
	for i := range n {
		c.SendText(fmt.Sprintf(`{"type":"stash","data":{"n":%d,"pad":"%0*d"}}`, i, i*40, 0))
		c.Next("stashed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.bodies {
		if want := fmt.Sprintf(`{"n":%d,"pad":"%0*d"}`, i, i*40, 0); string(b) != want {
			t.Fatalf("body %d kept by the module is now %q, want %q", i, b, want)
		}
	}
	if len(s.bodies) != n {
		t.Fatalf("%d bodies, want %d", len(s.bodies), n)
	}
}
