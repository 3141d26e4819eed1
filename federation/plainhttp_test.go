package federation

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane/memory"
)

// TestGameServerNotMuster is docs/federation.md's "a game server that is
// not Muster", step by step, with nothing of this package on the node's
// side: plain HTTP with JSON bodies to join, announce and report rooms,
// and a home token checked by hand (HMAC-SHA256 over "v1.<payload>").
func TestGameServerNotMuster(t *testing.T) {
	t.Parallel()
	home, err := NewHome(HomeConfig{RegionsCache: -1}, memory.New(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(home.Handler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	_, nodeKey, err := home.CreateNode(ctx, NodeSpec{ID: "au-sydney", Country: "AU"})
	if err != nil {
		t.Fatal(err)
	}
	if err := home.Approve(ctx, "au-sydney"); err != nil {
		t.Fatal(err)
	}
	post := func(path, key, body string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		return res, data
	}

	// 1. Join once with the node key: the answer holds the server key.
	res, data := post("/api/v1/federation/join", nodeKey, `{"name":"photon-1"}`)
	if res.StatusCode != http.StatusCreated || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("join: %d %q %s", res.StatusCode, res.Header.Get("Cache-Control"), data)
	}
	var joined struct {
		ServerKey string `json:"server_key"`
	}
	if err := json.Unmarshal(data, &joined); err != nil || joined.ServerKey == "" {
		t.Fatalf("join answer %s: %v", data, err)
	}
	// 2. Announce every minute, as the seed shows.
	if res, data := post("/api/v1/federation/announce", joined.ServerKey, `{"services":{"photon":"203.0.113.9:22002"}}`); res.StatusCode != http.StatusOK {
		t.Fatalf("announce: %d %s", res.StatusCode, data)
	}

	// 3. A player arrives with a token home minted: check it by hand.
	secret := []byte("game-token-secret-0123456789")
	tok, err := MintToken(secret, Token{PlayerID: "alice", RoomID: "home-room-7", NodeID: "au-sydney", Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		t.Fatalf("token %q", tok)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		t.Fatal("the token's signature does not check by hand")
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Player string `json:"p"`
		Room   string `json:"r"`
		Node   string `json:"n"`
		Expiry int64  `json:"e"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Player != "alice" || claims.Room != "home-room-7" || claims.Node != "au-sydney" || claims.Expiry <= time.Now().Unix() {
		t.Fatalf("token payload %s: %v", payload, err)
	}

	// 4. Report the whole room on every change, and once closed.
	report := func(body string) {
		t.Helper()
		if res, data := post("/api/v1/federation/rooms", joined.ServerKey, body); res.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`"stored":true`)) {
			t.Fatalf("report %s: %d %s", body, res.StatusCode, data)
		}
	}
	report(`{"room_id":"home-room-7","members":["alice"],"properties":{"map":"dunes"}}`)
	report(`{"room_id":"home-room-7","members":["alice","bob"],"properties":{"map":"dunes"}}`)
	r, err := home.Room(ctx, "home-room-7")
	if err != nil || !slices.Equal(r.Members, []string{"alice", "bob"}) || r.NodeID != "au-sydney" || r.Properties["map"] != "dunes" {
		t.Fatalf("the room at home: %+v %v", r, err)
	}
	report(`{"room_id":"home-room-7","closed":true}`)
	if _, err := home.Room(ctx, "home-room-7"); err == nil {
		t.Fatal("a closed room is still found")
	}
}
