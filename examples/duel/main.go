// Command duel is Muster's example game: a real-time arena with a browser
// client, queues, lobby codes and redirects. `go run ./examples/duel` serves
// http://localhost:8080 on the in-memory backplane; with muster.server.fleet.redis
// and a shared muster.security.key set, any number of copies form one fleet.
package main

import (
	"context"
	"embed"
	"io/fs"
	"log"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/clients/js"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/matchmaking"
)

//go:embed static
var static embed.FS

func main() {
	cfg, err := muster.LoadConfigOver(defaults())
	if err == nil {
		err = muster.Serve(context.Background(), Duel{}, cfg, options()...)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// defaults are Muster's defaults but for the duel's checkpoints: every
// second each match's state is written to the backplane, so that a
// server's crash costs its matches a second, not the matches (another
// server resumes them). muster.room.checkpoint.interval, in config.yml or
// MUSTER__ROOM__CHECKPOINT__INTERVAL, sets another interval; 0 turns them
// off.
func defaults() config.Config {
	d := muster.DefaultConfig()
	d.Room.Checkpoint.Interval = config.Duration(time.Second)
	return d
}

// options are the duel's playlists, lobbies, tickets and page.
func options() []muster.Option {
	web, _ := fs.Sub(static, "static")
	return []muster.Option{
		muster.WithPlaylists(matchmaking.Playlist{Name: "duel"}, matchmaking.Playlist{Name: "squad", Teams: 2, TeamSize: 2}),
		muster.WithLobbies(),
		muster.WithGuestTickets("/ticket"), // the example trusts the id the browser keeps
		muster.WithRoutes(func(r chi.Router) {
			r.Handle("/client/*", http.StripPrefix("/client/", js.Handler())) // the Muster client the page loads
			r.Handle("/*", http.FileServerFS(web))
		}),
	}
}
