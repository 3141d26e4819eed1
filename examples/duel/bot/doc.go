// Package bot is a client of the duel example that plays like a person:
// it gets a connection ticket, connects through the game's one public
// address, says hello, queues for a playlist or creates or joins a lobby by
// code, plays its matches (chasing the orb, or steering at random) at
// 20 inputs a second, follows redirects, and reconnects after a drop.
//
// It is a load generator and the player of the end-to-end tests, so it
// records what happened to it in a Report: the servers it was on, every
// redirect with its reason, its rooms and how they ended, the time it had
// waited when a queue place moved, every connection attempt that failed
// and every connection that dropped, and the time from losing a
// connection to being back in its room.
//
// # Protocol
//
// The bot speaks the duel protocol over the room host's WebSocket
// transport: POST <url>/ticket {"player"} → {"ticket","player"}; WebSocket
// <url>/play?ticket=…[&node=…]; first message {"type":"hello","data":
// {"mode":"new"|"rejoin"}}, answered by {"type":"welcome","node","player",
// "room"}. A redirect packet {"type":"redirect","node","param","reason",
// "ticket","query"} is followed by the server's close; the bot then
// connects to the same public address with the redirect's query
// (?<param>=<node>&ticket=…) and hello "rejoin", as the browser client
// does: it asks for a new ticket only when the redirect carried none, or
// when that first attempt failed. After a drop it reconnects at once
// (then with a backoff) with hello "rejoin" and the server it was last on,
// or with no server at all when Config.Anywhere is set.
//
// # Lifecycle and concurrency
//
// New checks the configuration and starts nothing. Run connects and plays
// until its context ends, until Config.Matches matches have ended, or until
// the server closes the connection for a protocol error (a *CloseError);
// it leaves its room and closes its connection before it returns. The
// commands (Queue, CreateLobby, JoinLobby, …) may be called from any
// goroutine at any time: they are sent on the current connection, or on
// the next one when the bot is between connections. Report and Wait may
// also be called from any goroutine. A Bot runs once.
package bot
