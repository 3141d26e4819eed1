package dashboard

import (
	"embed"
	"encoding/json"
	"net/http"
	"time"

	"github.com/muster-gg/muster/fleet"
)

// View is the fleet a dashboard shows. *fleet.Fleet implements it. A View
// that also has a method Foreign() []string, as *fleet.Fleet has, lists
// the servers it drops for their key in Snapshot.Foreign.
type View interface {
	// Nodes returns the live servers, this one included, without a
	// backplane round trip.
	Nodes() []fleet.Node
	// ID returns the id of the server serving the page.
	ID() string
}

// Paths served by Handler.
const (
	// Path is the page.
	Path = "/muster/dashboard"
	// PathNodes is the feed the page polls: a Snapshot as JSON.
	PathNodes = "/muster/dashboard/nodes"
)

// Snapshot is the feed served at PathNodes.
type Snapshot struct {
	// Self is the id of the server that answered.
	Self string `json:"self"`
	// Time is when the snapshot was taken, by that server's clock.
	Time time.Time `json:"time"`
	// Nodes are the live servers in its view, sorted by id.
	Nodes []Node `json:"nodes"`
	// Foreign are the ids of the servers of its cluster that it drops
	// from its view, signed with another muster.security.key
	// (fleet.Fleet.Foreign): the fleet is split in two that never match
	// players together. Empty while the fleet is whole.
	Foreign []string `json:"foreign,omitempty"`
}

// foreignView is a View that lists the servers signed with another key.
type foreignView interface{ Foreign() []string }

// Node is one live server as the dashboard shows it: its published record
// (fleet.Node, with the same JSON names) without its internal address.
type Node struct {
	// ID is the server's node id.
	ID string `json:"id"`
	// Cluster is the fleet's name.
	Cluster string `json:"cluster,omitempty"`
	// Region is the server's region, if it has one.
	Region string `json:"region,omitempty"`
	// PublicAddress is where clients reach the server directly, if
	// anywhere.
	PublicAddress string `json:"public,omitempty"`
	// State is the server's state: starting, ready, full, draining or
	// leaving.
	State fleet.State `json:"state"`
	// Load and MaxLoad are the server's load and its budget.
	Load    int `json:"load"`
	MaxLoad int `json:"max_load"`
	// LoadStep, when not 0, says Load is published in steps of it: the
	// exact load is less than a step from Load (fleet.Node.LoadStep).
	LoadStep int `json:"load_step,omitempty"`
	// Stats are the statistics its modules publish: "queue:<playlist>",
	// and "rooms" and "players" when the room host publishes them.
	Stats map[string]int64 `json:"stats,omitempty"`
}

//go:embed static
var static embed.FS

// csp lets the page load its own script and style and fetch its own feed,
// and nothing else.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the dashboard of v under its full paths (mount it at the
// root, or at Path and everything below it): GET Path (the page), GET
// PathNodes (the feed), and the page's script and style beside them. The
// page fetches its parts by relative URLs, so a proxy may serve it under
// another prefix.
func Handler(v View) http.Handler {
	mux := http.NewServeMux()
	asset := func(name, contentType string) http.HandlerFunc {
		body, err := static.ReadFile("static/" + name)
		if err != nil {
			panic(err) // embedded at build time: cannot happen
		}
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "no-cache")
			w.Write(body)
		}
	}
	mux.HandleFunc("GET "+Path, asset("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET "+Path+"/app.js", asset("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET "+Path+"/app.css", asset("app.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET "+Path+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "../dashboard", http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET "+PathNodes, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(snapshot(v))
	})
	return secure(mux)
}

// snapshot reads v once.
func snapshot(v View) Snapshot {
	nodes := v.Nodes()
	s := Snapshot{Self: v.ID(), Time: time.Now().UTC(), Nodes: make([]Node, len(nodes))}
	if fv, ok := v.(foreignView); ok {
		s.Foreign = fv.Foreign()
	}
	for i, n := range nodes {
		s.Nodes[i] = Node{
			ID: n.ID, Cluster: n.Cluster, Region: n.Region, PublicAddress: n.PublicAddress,
			State: n.State, Load: n.Load, LoadStep: n.LoadStep, MaxLoad: n.MaxLoad, Stats: n.Stats,
		}
	}
	return s
}

// secure sets the headers that keep the page to itself.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
