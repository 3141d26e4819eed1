package federation

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseToken: no input panics, and whatever parses re-mints to a token
// that parses to the same thing.
func FuzzParseToken(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	good, _ := MintToken(tokenSecret, Token{PlayerID: "p", RoomID: "r", NodeID: "n", Expires: now.Add(time.Hour)})
	for _, s := range []string{good, "", "v1", "v1..", "v1.e30.", good + "x", signedRaw("e30")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(tokenSecret, s, now)
		if err != nil {
			if tok != (Token{}) {
				t.Fatalf("error %v with a token %+v", err, tok)
			}
			return
		}
		if tok.PlayerID == "" || tok.RoomID == "" || !now.Before(tok.Expires) {
			t.Fatalf("accepted %+v", tok)
		}
		again, err := MintToken(tokenSecret, tok)
		if err != nil {
			t.Fatal(err)
		}
		if tok2, err := ParseToken(tokenSecret, again, now); err != nil || tok2 != tok {
			t.Fatalf("re-minted %+v, %v; want %+v", tok2, err, tok)
		}
	})
}

// FuzzTokenRoundTrip: every token MintToken makes parses back.
func FuzzTokenRoundTrip(f *testing.F) {
	f.Add("player", "room", "node", int64(1_700_003_600))
	f.Add("p\x00", "r.\"", "", int64(1))
	f.Fuzz(func(t *testing.T, player, room, node string, exp int64) {
		now := time.Unix(1_700_000_000, 0)
		in := Token{PlayerID: player, RoomID: room, NodeID: node, Expires: time.Unix(exp, 0)}
		s, err := MintToken(tokenSecret, in)
		if err != nil {
			return
		}
		out, err := ParseToken(tokenSecret, s, now)
		switch {
		case !now.Before(in.Expires):
			if err == nil {
				t.Fatalf("expired token accepted: %+v", out)
			}
		case utf8.ValidString(player) && utf8.ValidString(room) && utf8.ValidString(node):
			if err != nil || out != in {
				t.Fatalf("round trip %+v -> %+v, %v", in, out, err)
			}
		}
		// Ids that are not UTF-8 are changed by JSON; they must only
		// never panic.
	})
}

// fuzzDecoder checks a request decoder: no panic, and what it accepts
// survives a re-encode unchanged and validates again.
func fuzzDecoder[T any](f *testing.F, decode func([]byte) (T, error), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decode(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := decode(again)
		if err != nil {
			t.Fatalf("accepted %q, refused its re-encoding %s: %v", data, again, err)
		}
		if !reflect.DeepEqual(normalise(v), normalise(v2)) {
			t.Fatalf("re-decoded %+v, want %+v", v2, v)
		}
	})
}

// normalise makes nil and empty collections compare equal.
func normalise(v any) string {
	data, _ := json.Marshal(v)
	var m any
	_ = json.Unmarshal(data, &m)
	out, _ := json.Marshal(m)
	return string(out)
}

func FuzzDecodeAnnounce(f *testing.F) {
	fuzzDecoder(f, decodeAnnounce,
		`{"services":{"game":"203.0.113.9:22002","turn":"203.0.113.9:3478"},"hardware":{"os":"linux","cpus":8},"epoch":5}`,
		`{"node_id":"au","services":null}`, ``, `{"services":{"":""}}`, `[]`, `{"hardware":{"cpus":-1}}`)
}

func FuzzDecodeJoin(f *testing.F) {
	fuzzDecoder(f, decodeJoin, `{"name":"syd-1","hardware":{"hostname":"h"}}`, `{}`, `{"name":"\u0000"}`)
}

func FuzzDecodeRoomReport(f *testing.F) {
	fuzzDecoder(f, decodeRoomReport,
		`{"room_id":"r1","members":["a","b"],"properties":{"mode":"duel"},"seq":3}`,
		`{"room_id":"r1","closed":true,"seq":4}`, `{"room_id":"","seq":1}`, `{"seq":18446744073709551615,"room_id":"x"}`,
		seedReport)
}

func FuzzDecodeNodeSpec(f *testing.F) {
	fuzzDecoder(f, decodeNodeSpec, `{"id":"au-sydney","name":"Sydney","country":"au","region":"Oceania"}`, `{"id":"-x","country":"A1"}`)
}

// FuzzDoors sends arbitrary bodies through the announce and rooms doors
// with a valid key: home answers 200 or a 4xx, never a 5xx.
func FuzzDoors(f *testing.F) {
	e := newEnv(f, HomeConfig{Limits: RateLimits{Announce: -1, Rooms: -1, PerIP: -1}})
	_, sk := e.sydney()
	for _, s := range []string{`{"services":{"game":"a:1"}}`, `{"room_id":"r","members":["a"],"seq":1}`, `{`, `null`, `"x"`} {
		f.Add(true, []byte(s))
		f.Add(false, []byte(s))
	}
	f.Fuzz(func(t *testing.T, announce bool, body []byte) {
		path := PathRooms
		if announce {
			path = PathAnnounce
		}
		res := serve(t, e.h, "POST", path, sk, body, "192.0.2.1:1")
		if res.Status != http.StatusOK && (res.Status < 400 || res.Status > 499) {
			t.Fatalf("%s %q: %d %s", path, body, res.Status, res.Body)
		}
	})
}
