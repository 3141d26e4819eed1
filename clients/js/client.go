// Package js carries Muster's JavaScript client, built: the ES module
// dist/muster.js (with its TypeScript declarations, dist/muster.d.ts),
// compiled by tsc from src/muster.ts and committed, so that a Go program
// can serve it with nothing but Go installed. The duel example's page
// loads it from here.
//
// The client is developed with npm in this directory: npm ci, then
// npm test (which also checks that the committed build is what tsc
// produces from the sources).
package js

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed dist/muster.js dist/muster.d.ts
var dist embed.FS

// FS returns the built client: muster.js and muster.d.ts at its root.
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embedded tree always has dist
	}
	return sub
}

// Handler serves the built client's files, for a route such as
// /client/ with the prefix stripped:
//
//	r.Handle("/client/*", http.StripPrefix("/client/", js.Handler()))
func Handler() http.Handler { return http.FileServerFS(FS()) }
