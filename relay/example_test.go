package relay_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/relay"
)

// Two servers of one fleet share a secret; a client that reaches server a
// asking for node b is relayed to b, whose handler sees the client as if it
// had connected directly.
func Example() {
	var (
		mu    sync.Mutex
		addrs = map[string]string{} // node id → internal address, normally the fleet's view
	)
	dir := relay.DirectoryFunc(func(id string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		addr, ok := addrs[id]
		return addr, ok
	})

	// The game's own WebSocket handler, the same on every server.
	game := func(node string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			msg := fmt.Sprintf("hello from %s (relayed: %v, scheme: %s)", node, relay.FromRelay(r), relay.ClientScheme(r))
			_ = c.Write(r.Context(), websocket.MessageText, []byte(msg))
			_ = c.Close(websocket.StatusNormalClosure, "bye")
		})
	}

	start := func(id string) (*relay.Relay, *httptest.Server) {
		rl, err := relay.New(relay.Config{NodeID: id, Secret: "a secret shared by the fleet"}, dir, slog.New(slog.DiscardHandler))
		if err != nil {
			panic(err)
		}
		srv := httptest.NewServer(rl.Middleware(game(id)))
		mu.Lock()
		addrs[id] = srv.Listener.Addr().String()
		mu.Unlock()
		return rl, srv
	}
	relayA, a := start("a")
	relayB, b := start("b")
	defer b.Close()
	defer a.Close()
	defer relayB.Close() // relayed connections are hijacked: close them before the servers
	defer relayA.Close()

	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, a.URL+"/play?node=b", nil)
	if err != nil {
		panic(err)
	}
	defer c.CloseNow()
	_, msg, err := c.Read(ctx)
	fmt.Println(string(msg), err)
	_, _, err = c.Read(ctx)
	fmt.Println(websocket.CloseStatus(err))
	fmt.Println("relayed connections:", relayA.Stats().Relayed)
	// Output:
	// hello from b (relayed: true, scheme: http) <nil>
	// StatusNormalClosure
	// relayed connections: 1
}
