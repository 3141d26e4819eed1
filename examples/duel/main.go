// Command duel is Muster's example game: a small real-time arena with a
// browser client, queues, lobby codes and redirects. Alone it runs on the
// in-memory backplane:
//
//	go run ./examples/duel
//
// and serves http://localhost:8080. With muster.server.fleet.redis set (in
// config.yml or MUSTER__SERVER__FLEET__REDIS) and a shared
// MUSTER__SECURITY__KEY, any number of copies form one fleet.
package main

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/muster-gg/muster/clients/js"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/dashboard"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/metrics"
	"github.com/muster-gg/muster/relay"
	"github.com/muster-gg/muster/room"
)

//go:embed static
var static embed.FS

func main() {
	path := flag.String("config", "config.yml", "the configuration file; missing is fine")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*path, logger); err != nil {
		fmt.Fprintln(os.Stderr, "duel:", err)
		os.Exit(1)
	}
}

func loadConfig(path string) (config.Config, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		path = ""
	}
	return config.Load(path, os.Environ())
}

func run(path string, logger *slog.Logger) error {
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	goredis.SetLogger(quietRedis{}) // the fleet logs an outage once
	nodeID := cfg.NodeID()

	bp, err := cfg.OpenBackplane()
	if err != nil {
		return err
	}
	defer bp.Close()
	reg := prometheus.NewRegistry()
	fl, err := fleet.New(cfg.FleetConfig(nodeID, config.MachineIP()), metrics.Instrument(bp, reg), logger)
	if err != nil {
		return err
	}
	host, err := room.New[*Match, Input, *Fighter](Duel{}, room.Config{Secret: cfg.Secret()}, logger)
	if err != nil {
		return err
	}
	host.UseServer(fl)
	host.UseFleet(fl)
	modules, err := useModules(host)
	if err != nil {
		return err
	}
	rl, err := relay.New(cfg.RelayConfig(nodeID), fl, logger)
	if err != nil {
		return err
	}
	defer rl.Close()
	reg.MustRegister(metrics.NewCollector(metrics.Sources{Fleet: fl, Rooms: host, Relay: rl}))

	r := chi.NewRouter()
	r.Use(relay.RealIP(cfg.Proxies())) // the client behind the load balancer
	r.Use(rl.Middleware)
	r.Handle("/muster/server/*", fl.Handler())
	r.Handle("/metrics", metrics.Handler(reg))
	r.Handle("/muster/dashboard", dashboard.Handler(fl))
	r.Handle("/muster/dashboard/*", dashboard.Handler(fl))
	r.Handle("/play", host.Handler())
	r.Post("/ticket", ticketHandler(host))
	web, _ := fs.Sub(static, "static")
	r.Handle("/client/*", http.StripPrefix("/client/", js.Handler())) // the Muster client the page loads
	r.Handle("/*", http.FileServerFS(web))

	addr := net.JoinHostPort(cfg.Server.HTTP.Host, strconv.Itoa(cfg.Server.HTTP.Port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("serving", "addr", l.Addr().String(), "redis", cfg.Server.Fleet.Redis != "")

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return fl.Run(ctx) })
	g.Go(func() error { return host.Run(ctx) })
	for _, run := range modules {
		g.Go(func() error { return run(ctx) })
	}
	g.Go(func() error {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		// SIGTERM drains: newcomers go elsewhere, queues and lobbies move,
		// rooms finish; then the server leaves and everything stops.
		err := fl.DrainOnSignal(ctx)
		stop()
		return err
	})
	g.Go(func() error {
		select {
		case <-fl.Done():
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		rl.Shutdown(sctx)
		return srv.Shutdown(sctx)
	})
	fl.MarkReady()
	err = g.Wait()
	logger.Info("stopped")
	return err
}

// ticketHandler mints a connection ticket. The example trusts the player
// id the browser keeps; a real game mints tickets where it signs players
// in.
func ticketHandler(host *room.Host[*Match, Input, *Fighter]) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Player string `json:"player"`
		}
		json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&req)
		if req.Player == "" || len(req.Player) > 32 || strings.ContainsAny(req.Player, "\x00:{} ") {
			req.Player = "guest-" + strings.ToLower(rand.Text()[:8])
		}
		t, err := host.Tickets().Issue(req.Player)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"ticket": t, "player": req.Player})
	}
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
