// Package dashboard serves a live web page of a fleet: every live server
// with its region, state, load against its budget, queues per playlist,
// rooms and players, as seen from the server that serves the page.
//
// Mount Handler on every server (the page is the same wherever it is
// opened) and open Path in a browser:
//
//	router.Handle("/muster/dashboard", dashboard.Handler(fl))
//	router.Handle("/muster/dashboard/*", dashboard.Handler(fl))
//
// The page is plain HTML, CSS and JavaScript embedded in the binary; there
// is no build step. It polls PathNodes, a JSON Snapshot, every second; the
// view it shows is the fleet's own, refreshed once a heartbeat, so the page
// is never more than a heartbeat and a second behind. Rooms and players
// are the fleet statistics "rooms" and "players" when a server publishes
// them, and "–" otherwise; queues are the statistics "queue:<playlist>".
//
// The page and the feed show load, state and public addresses, never
// internal addresses or secrets, and change nothing; still, they tell the
// size and load of the fleet, so serve them where only operators reach
// them.
//
// # Lifecycle and concurrency
//
// Handler starts nothing: every request reads the view once. A handler is
// safe for concurrent use when its View is, as *fleet.Fleet is.
package dashboard
