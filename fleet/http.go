package fleet

import (
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"strings"

	"github.com/muster-gg/muster/relay"
)

// Probe and control paths served by Handler.
const (
	PathLive     = "/muster/server/live"
	PathReady    = "/muster/server/ready"
	PathCapacity = "/muster/server/capacity"
	PathDrain    = "/muster/server/drain"
)

// Capacity is the load report served at PathCapacity.
type Capacity struct {
	NodeID   string           `json:"node_id"`
	State    State            `json:"state"`
	Load     int              `json:"load"`
	MaxLoad  int              `json:"max_load"`
	Stats    map[string]int64 `json:"stats,omitempty"`
	Nodes    int              `json:"nodes"`
	Attached bool             `json:"attached"`
	// Foreign are the servers of the cluster this server drops from its
	// view, signed with another muster.security.key (Fleet.Foreign).
	Foreign []string `json:"foreign,omitempty"`
}

// Handler serves the probes, under their full paths (mount it at the root
// or at "/muster/server/"): GET PathLive (200 while the process works),
// GET PathReady (200 only while ready; 503 when starting, full, draining or
// leaving, 503 "detached" while the backplane has never been reached, and
// 503 "foreign-key: …" while the servers of the cluster signed with
// another security key outnumber those signed with this one's: see
// Foreign), GET PathCapacity (a Capacity as JSON), and POST PathDrain,
// which starts a drain when its TCP peer is a loopback address and no
// proxy forwarded it, or when it carries "Authorization: Bearer
// <DrainToken>".
func (f *Fleet) Handler() http.Handler {
	r := http.NewServeMux()
	r.HandleFunc("GET "+PathLive, func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("live\n"))
	})
	r.HandleFunc("GET "+PathReady, func(w http.ResponseWriter, _ *http.Request) {
		s := f.State()
		if s == StateReady && f.Detached() {
			// The backplane was never reached: this server is a fleet
			// of one until it is.
			http.Error(w, "detached", http.StatusServiceUnavailable)
			return
		}
		if s == StateReady {
			if reason := f.outnumbered(); reason != "" {
				http.Error(w, reason, http.StatusServiceUnavailable)
				return
			}
		}
		if s != StateReady {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		w.Write([]byte(string(s) + "\n"))
	})
	r.HandleFunc("GET "+PathCapacity, func(w http.ResponseWriter, _ *http.Request) {
		self := f.Self()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(Capacity{
			NodeID: self.ID, State: self.State, Load: self.Load, MaxLoad: self.MaxLoad,
			Stats: self.Stats, Nodes: len(f.Nodes()), Attached: f.Attached(), Foreign: f.Foreign(),
		})
	})
	r.HandleFunc("POST "+PathDrain, func(w http.ResponseWriter, r *http.Request) {
		if !f.drainAllowed(r) {
			http.Error(w, "drain: only from loopback or with the drain token", http.StatusForbidden)
			return
		}
		if !f.goDrain() {
			http.Error(w, "drain: this server has left the fleet", http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte("draining\n"))
	})
	return r
}

// drainAllowed reports whether r may start a drain: it carries the drain
// token, or it was made on this machine. The latter is decided on the TCP
// peer (relay.PeerAddr), never on an address a header named, and a request
// that a proxy forwarded for someone (X-Forwarded-For, X-Real-IP,
// Forwarded, or the header of muster.server.http.real-ip-header, which
// relay.Forwarded reports) is not taken to be local even when the proxy
// is.
func (f *Fleet) drainAllowed(r *http.Request) bool {
	if tok := f.cfg.DrainToken; tok != "" {
		if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
			subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1 {
			return true
		}
	}
	if relay.Forwarded(r) {
		return false
	}
	for _, h := range []string{"X-Forwarded-For", "X-Real-Ip", "Forwarded"} {
		if _, ok := r.Header[h]; ok {
			return false
		}
	}
	host, _, err := net.SplitHostPort(relay.PeerAddr(r))
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
