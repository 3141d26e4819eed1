// Command rps is Muster's turn-based example: rock-paper-scissors, best of
// three, a turn timer, seats kept for players who drop, a forfeit for one
// who stays away. `go run ./examples/rps` serves http://localhost:8080;
// RPS_TURN, RPS_FORFEIT and RPS_RESULTS set the rules (see Rules).
package main

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log"
	"net/http"
	"os"

	"github.com/go-chi/chi/v5"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/clients/js"
	"github.com/muster-gg/muster/matchmaking"
)

//go:embed static
var static embed.FS

func main() {
	cfg, err := muster.LoadConfig()
	rules, rerr := RulesFromEnv(os.Getenv)
	if err = errors.Join(err, rerr); err == nil {
		results := NewResults(rules.Results)
		err = muster.Serve(context.Background(), RPS{Rules: rules, Results: results}, cfg, options(results)...)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// options are the game's playlist, lobbies, tickets, results and page.
func options(results *Results) []muster.Option {
	web, _ := fs.Sub(static, "static")
	return []muster.Option{
		muster.WithPlaylists(matchmaking.Playlist{Name: "rps"}),
		muster.WithLobbies(),
		muster.WithGuestTickets("/ticket"), // the example trusts the id the browser keeps
		muster.WithModules(results),
		muster.WithRoutes(func(r chi.Router) {
			r.Handle("/client/*", http.StripPrefix("/client/", js.Handler())) // the Muster client the page loads
			r.Handle("/*", http.FileServerFS(web))
		}),
	}
}
