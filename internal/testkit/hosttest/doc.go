// Package hosttest is test support for the room-host modules (lobby,
// matchmaking), for tests only.
//
// Game is the test game: a test that needs "a game" uses it. Players
// stands in for the players' connections when a test runs modules on the
// servers of a fleettest.Cluster without sockets, in a testing/synctest
// bubble: it keeps where each player is connected and what it was sent,
// and moves players as room.Host.Move and a client following the redirect
// would; NopEnv is a host that does nothing, for a module's own logic.
// For socket tests, StartServers runs servers with real WebSockets behind
// their relays, and Server.Connect connects a playtest.Player, the kit's
// WebSocket player, to one of them.
//
// Game and Players are safe for concurrent use.
package hosttest
