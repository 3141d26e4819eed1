package lobby_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/lobby"
	"github.com/muster-gg/muster/room"
)

// One server: a host creates a lobby, a friend joins with the code, and
// the host starts the match.
func Example() {
	host, err := room.New[*hosttest.Sim, int, string](&hosttest.Game{}, room.Config{}, quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	lobbies, err := lobby.New(lobby.Config{CodeLength: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := host.Use(lobbies); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { host.Run(ctx) })
	wg.Go(func() { lobbies.Run(ctx) })
	srv := httptest.NewServer(host.Handler())
	defer func() {
		srv.Close()
		cancel()
		wg.Wait()
	}()

	dial := func(name string) *websocket.Conn {
		tk, _ := host.Tickets().Issue(name)
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"?ticket="+tk, nil)
		if err != nil {
			panic(err)
		}
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","data":{"mode":"new"}}`))
		return c
	}
	// next reads c's packets until one of type typ.
	next := func(c *websocket.Conn, typ string) (p struct {
		Type, Code, Host, Kind string
		Members                []string
	}) {
		for p.Type != typ {
			_, data, err := c.Read(ctx)
			if err != nil {
				panic(err)
			}
			json.Unmarshal(data, &p)
		}
		return p
	}

	ann := dial("ann")
	defer ann.CloseNow()
	ann.Write(ctx, websocket.MessageText, []byte(`{"type":"lobby.create"}`))
	code := next(ann, lobby.TypeState).Code
	_, valid := lobby.NormalizeCode(code)
	fmt.Println("code of 4 unambiguous characters:", len(code) == 4 && valid)

	ben := dial("ben")
	defer ben.CloseNow()
	ben.Write(ctx, websocket.MessageText, []byte(`{"type":"lobby.join","data":{"code":"`+strings.ToLower(code)+`"}}`))
	st := next(ben, lobby.TypeState)
	fmt.Println("host:", st.Host, "members:", st.Members)

	ann.Write(ctx, websocket.MessageText, []byte(`{"type":"lobby.start"}`))
	fmt.Println("ben plays in a room of kind", next(ben, "room").Kind)
	// Output:
	// code of 4 unambiguous characters: true
	// host: ann members: [ann ben]
	// ben plays in a room of kind lobby
}

func ExampleNormalizeCode() {
	for _, typed := range []string{" k7qx ", "K7QX0", "K7"} {
		code, ok := lobby.NormalizeCode(typed)
		fmt.Printf("%q → %q %v\n", typed, code, ok)
	}
	// Output:
	// " k7qx " → "K7QX" true
	// "K7QX0" → "" false
	// "K7" → "" false
}
