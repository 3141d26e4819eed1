package federation

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// What nodes send home may come from a stolen key or a hostile node: each
// door that reads a body must answer it with a 2xx or a 4xx, read no more
// than its limit, read nothing for a key that does not open it, and leave
// the register as it was when it refuses.

// doorFixture is a home on small limits: au-sydney (approved) with an
// announced server that reported room r1 and a revoked server, and
// nz-auckland (approved) whose announced server reported room r2.
type doorFixture struct {
	*env
	nodeKey, serverKey, revokedKey, otherKey string
}

// doorConfig keeps the limits small enough for fuzzed bodies to pass them.
var doorConfig = HomeConfig{MaxBody: 1024, MaxReportBytes: 512, SelfTestBytes: 2048}

func newDoorFixture(tb testing.TB) *doorFixture {
	tb.Helper()
	f := &doorFixture{env: newEnv(tb, doorConfig)}
	f.nodeKey = f.createNode("au-sydney", "AU", true)
	_, f.serverKey = f.join(f.nodeKey)
	revoked, rk := f.join(f.nodeKey)
	f.revokedKey = rk
	if err := f.home.RevokeServer(context.Background(), revoked); err != nil {
		tb.Fatal(err)
	}
	_, f.otherKey = f.join(f.createNode("nz-auckland", "NZ", true))
	f.announce(f.serverKey, map[string]string{ServiceGame: "au:1"})
	f.announce(f.otherKey, map[string]string{ServiceGame: "nz:1"})
	f.report(f.serverKey, report("r1", 5, "a"))
	f.report(f.otherKey, report("r2", 5, "b"))
	return f
}

// register returns every record of e's register (the rate-limit counters
// are not records).
func (e *env) register() map[string]map[string][]byte {
	e.t.Helper()
	out := map[string]map[string][]byte{}
	for _, coll := range []string{collNodes, collServers, collKeys, collPresence, collSelfTests, collRooms, collCounts} {
		recs, err := e.bp.Records(context.Background(), coll)
		if err != nil {
			e.t.Fatal(err)
		}
		out[coll] = recs
	}
	return out
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// spaces is a body that never ends.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// bodyDoor is a door that reads a body: the key that opens it, a valid
// key of another kind, and its limit on the body.
type bodyDoor struct {
	path  string
	key   func(*doorFixture) string
	wrong func(*doorFixture) string
	limit func(HomeConfig) int64
}

func (f *doorFixture) node() string   { return f.nodeKey }
func (f *doorFixture) server() string { return f.serverKey }
func (f *doorFixture) admin() string  { return adminToken }

var bodyDoors = []bodyDoor{
	{PathJoin, (*doorFixture).node, (*doorFixture).server, func(c HomeConfig) int64 { return c.MaxBody }},
	{PathAnnounce, (*doorFixture).server, (*doorFixture).node, func(c HomeConfig) int64 { return c.MaxBody }},
	{PathSelfTest, (*doorFixture).server, (*doorFixture).node, func(c HomeConfig) int64 { return c.SelfTestBytes }},
	{PathRooms, (*doorFixture).server, (*doorFixture).node, func(c HomeConfig) int64 { return c.MaxReportBytes }},
	{PathAdmin + "/nodes", (*doorFixture).admin, (*doorFixture).server, func(c HomeConfig) int64 { return c.MaxBody }},
}

// post sends body to path through f's handler with key and returns the
// answer and how much of body home read.
func (f *doorFixture) post(path, key string, body io.Reader) (response, int64) {
	cr := &countingReader{r: body}
	req := httptest.NewRequest(http.MethodPost, path, cr)
	req.RemoteAddr = "192.0.2.1:1234"
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return response{Status: rec.Code, Body: rec.Body.Bytes(), Header: rec.Header()}, cr.n
}

// FuzzDoorBodies sends a fuzzed body to each door that reads one (join,
// announce, self-test, rooms, admin create), with the key that opens it
// or one that does not (none, unknown, of another kind, revoked, fuzzed):
// no panic and no 5xx; with the right key at most the door's limit read,
// 413 past it; with any other key 401 or 403 and nothing read; and the
// register unchanged by every refusal.
func FuzzDoorBodies(f *testing.F) {
	seeds := []string{
		`{"name":"syd-2","hardware":{"hostname":"h","cpus":4}}`,
		`{"services":{"game":"203.0.113.9:22002"},"epoch":99}`,
		`{"node_id":"nz-auckland","services":{}}`,
		`{"room_id":"r3","members":["a","b"],"properties":{"mode":"duel"},"seq":9}`,
		`{"room_id":"r2","members":["a"],"seq":9}`,
		`{"room_id":"r1","closed":true,"seq":9}`,
		`{"room_id":"r1","members":["a"],"seq":1}`,
		`{"id":"de-berlin","country":"de","name":"Berlin"}`,
		`{"id":"au-sydney","country":"AU"}`,
		``, `{`, `null`, `[]`, `"x"`, `{} {}`, "\x00\xff",
	}
	for door := range bodyDoors {
		for who := range 6 {
			for _, s := range seeds {
				f.Add(uint8(door), uint8(who), "mfs_x", []byte(s))
			}
		}
	}
	f.Fuzz(func(t *testing.T, door, who uint8, key string, body []byte) {
		fx := newDoorFixture(t)
		d := bodyDoors[int(door)%len(bodyDoors)]
		right := d.key(fx)
		switch who % 6 {
		case 0:
			key = right
		case 1:
			key = ""
		case 2:
			key = newKey(kindServer)
			if d.path == PathJoin {
				key = newKey(kindNode)
			}
		case 3:
			key = d.wrong(fx)
		case 4:
			key = fx.revokedKey
		}
		before := fx.register()
		res, read := fx.post(d.path, key, bytes.NewReader(body))
		desc := fmt.Sprintf("%s with key %d %q, body %q: %d %s", d.path, who%6, key, body, res.Status, res.Body)
		limit := d.limit(fx.home.cfg)
		switch {
		case res.Status/100 != 2 && res.Status/100 != 4:
			t.Fatal(desc)
		case key != right && res.Status != http.StatusUnauthorized && res.Status != http.StatusForbidden:
			t.Fatalf("%s: want 401 or 403", desc)
		case key != right && read != 0:
			t.Fatalf("%s: read %d bytes for a key that does not open the door", desc, read)
		case read > limit+1:
			t.Fatalf("%s: read %d bytes, the limit is %d", desc, read, limit)
		case key == right && int64(len(body)) > limit && res.Status != http.StatusRequestEntityTooLarge:
			t.Fatalf("%s: want 413 for %d bytes", desc, len(body))
		}
		if res.Status >= 400 {
			if after := fx.register(); !reflect.DeepEqual(after, before) {
				t.Fatalf("%s: the register changed", desc)
			}
			return
		}
		if d.path == PathSelfTest {
			var st selfTestResponse
			res.decode(t, &st)
			if st.Bytes != int64(len(body)) {
				t.Fatalf("%s: recorded %d bytes", desc, st.Bytes)
			}
		}
	})
}

// TestDoorsBoundBodies sends a body that never ends to each door on the
// default limits: with the right key home reads its limit and a byte and
// answers 413, with an unknown key it reads nothing and answers 401.
func TestDoorsBoundBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, HomeConfig{})
	fx := &doorFixture{env: e}
	fx.nodeKey = e.createNode("au-sydney", "AU", true)
	_, fx.serverKey = e.join(fx.nodeKey)
	for _, d := range bodyDoors {
		res, read := fx.post(d.path, d.key(fx), spaces{})
		if limit := d.limit(e.home.cfg); res.Status != http.StatusRequestEntityTooLarge || read > limit+1 {
			t.Errorf("%s, endless body: %d %s, read %d bytes; want 413 after at most %d", d.path, res.Status, res.Body, read, limit+1)
		}
		res, read = fx.post(d.path, newKey(kindServer), spaces{})
		if res.Status != http.StatusUnauthorized || read != 0 {
			t.Errorf("%s, endless body, unknown key: %d %s, read %d bytes; want 401 after none", d.path, res.Status, res.Body, read)
		}
	}
}
