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

	"github.com/go-chi/chi/v5"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/clients/js"
	"github.com/muster-gg/muster/matchmaking"
)

//go:embed static
var static embed.FS

func main() {
	cfg, err := muster.LoadConfig()
	if err == nil {
		err = muster.Serve(context.Background(), Duel{}, cfg, options()...)
	}
	if err != nil {
		log.Fatal(err)
	}
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
