package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const adminToken = "admin-token-0123456789abcdef"

// newClock returns a fake clock that only moves when told to.
func newClock() *testrun.Clock {
	return testrun.NewClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
}

// quiet is a logger for tests: errors only.
func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// env is one home with a fake clock on a memory backplane.
type env struct {
	t     testing.TB
	clock *testrun.Clock
	bp    backplane.Backplane
	home  *Home
	h     http.Handler
}

// newEnv returns a home whose regions are never cached, with cfg's other
// fields as given.
func newEnv(t testing.TB, cfg HomeConfig) *env {
	t.Helper()
	c := newClock()
	bp, err := memory.NewStore(memory.Config{Now: c.Now}).Cluster("home")
	if err != nil {
		t.Fatal(err)
	}
	return newEnvOn(t, cfg, bp, c)
}

func newEnvOn(t testing.TB, cfg HomeConfig, bp backplane.Backplane, c *testrun.Clock) *env {
	t.Helper()
	if cfg.AdminToken == "" {
		cfg.AdminToken = adminToken
	}
	if cfg.RegionsCache == 0 {
		cfg.RegionsCache = -1
	}
	cfg.Now = c.Now
	home, err := NewHome(cfg, bp, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, clock: c, bp: bp, home: home, h: home.Handler()}
}

// response is a recorded answer.
type response struct {
	Status int
	Body   []byte
	Header http.Header
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

func (r response) code(t testing.TB) string {
	t.Helper()
	var eb errorBody
	_ = json.Unmarshal(r.Body, &eb)
	return eb.Code
}

// do sends a request to the home's handler. body is JSON-encoded unless
// it is a string or []byte.
func (e *env) do(method, path, key string, body any) response {
	e.t.Helper()
	return serve(e.t, e.h, method, path, key, body, "192.0.2.1:1234")
}

func serve(t testing.TB, h http.Handler, method, path, key string, body any, remote string) response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, r)
	req.RemoteAddr = remote
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{Status: rec.Code, Body: rec.Body.Bytes(), Header: rec.Header()}
}

// createNode creates a node through the Go API and returns its key.
func (e *env) createNode(id, country string, approve bool) string {
	e.t.Helper()
	ctx := context.Background()
	_, key, err := e.home.CreateNode(ctx, NodeSpec{ID: id, Country: country, Region: "r-" + country})
	if err != nil {
		e.t.Fatal(err)
	}
	if approve {
		if err := e.home.Approve(ctx, id); err != nil {
			e.t.Fatal(err)
		}
	}
	return key
}

// sydney creates the approved node au-sydney (AU) and enrols a server of
// it; it returns the node's key and the server's.
func (e *env) sydney() (nodeKey, serverKey string) {
	e.t.Helper()
	nodeKey = e.createNode("au-sydney", "AU", true)
	_, serverKey = e.join(nodeKey)
	return nodeKey, serverKey
}

// inRotation puts a server of the node whose key is given in rotation: it
// enrols it, passes its self-test and announces services. It returns the
// server's key.
func (e *env) inRotation(nodeKey string, services map[string]string) (serverKey string) {
	e.t.Helper()
	_, serverKey = e.join(nodeKey)
	e.selfTest(serverKey)
	e.announce(serverKey, services)
	return serverKey
}

// sydneyInRotation creates au-sydney and puts one server of it in rotation
// with game as its game server; it returns the server's key.
func (e *env) sydneyInRotation(game string) (serverKey string) {
	e.t.Helper()
	return e.inRotation(e.createNode("au-sydney", "AU", true), map[string]string{ServiceGame: game})
}

// join enrols a server with the node key and returns its id and key.
func (e *env) join(nodeKey string) (id, key string) {
	e.t.Helper()
	res := e.do("POST", PathJoin, nodeKey, joinRequest{Name: "srv"})
	if res.Status != http.StatusCreated {
		e.t.Fatalf("join: %d %s", res.Status, res.Body)
	}
	var jr joinResponse
	res.decode(e.t, &jr)
	return jr.ServerID, jr.ServerKey
}

// announce announces services with the server key and fails the test
// unless home accepts it.
func (e *env) announce(key string, services map[string]string) Announcement {
	e.t.Helper()
	res := e.do("POST", PathAnnounce, key, announceRequest{Services: services})
	if res.Status != http.StatusOK {
		e.t.Fatalf("announce: %d %s", res.Status, res.Body)
	}
	var a Announcement
	res.decode(e.t, &a)
	return a
}

// selfTest uploads a passing self-test with the server key.
func (e *env) selfTest(key string) selfTestResponse {
	e.t.Helper()
	res := e.do("POST", PathSelfTest, key, make([]byte, e.home.cfg.SelfTestBytes))
	if res.Status != http.StatusOK {
		e.t.Fatalf("self-test: %d %s", res.Status, res.Body)
	}
	var st selfTestResponse
	res.decode(e.t, &st)
	return st
}

// regions reads GET /api/v1/regions.
func (e *env) regions() RegionList {
	e.t.Helper()
	res := e.do("GET", PathRegions, "", nil)
	if res.Status != http.StatusOK {
		e.t.Fatalf("regions: %d %s", res.Status, res.Body)
	}
	var list RegionList
	res.decode(e.t, &list)
	return list
}

func regionNodes(list RegionList) []string {
	out := []string{}
	for _, r := range list.Regions {
		out = append(out, r.Node)
	}
	return out
}

// handlerTransport serves requests in process with a handler: no sockets,
// so it works inside synctest bubbles.
type handlerTransport struct {
	h http.Handler
	// drop, when set, decides to fail a request before home sees it.
	drop func(*http.Request) bool
}

func (tr handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if tr.drop != nil && tr.drop(req) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errDropped
	}
	r := req.Clone(req.Context())
	r.RemoteAddr = "198.51.100.7:4000"
	r.RequestURI = req.URL.RequestURI()
	if r.Body == nil {
		r.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	tr.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

type dropError struct{}

func (dropError) Error() string { return "test: request dropped" }

var errDropped error = dropError{}

func client(h http.Handler) *http.Client {
	return &http.Client{Transport: handlerTransport{h: h}}
}
