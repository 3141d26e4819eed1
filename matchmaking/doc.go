// Package matchmaking is the room-host module that queues players on
// playlists and matches them into rooms, across a fleet of servers.
//
// A game declares its playlists (name, teams, team size, a rating rule
// whose window widens with the time waited) and adds the module to its
// room.Host with Use. A player sends {"type":"queue","data":{"playlist":
// "duel","rating":1500}} (the rating is optional) and {"type":"unqueue"};
// it gets a WaitingPacket, and once matched the host's "room" packet. The
// rooms the module opens have Kind = the playlist name and Data = Match.
//
// # Queues gather
//
// The players of one playlist wait on one server, so that ten servers do
// not make ten small queues. Every server ranks the live servers that are
// ready with room, by the load they publish, for at least one match of
// the playlist, by GatherOrder's hashing, from the registry alone, and
// they agree: the first gathers the playlist and forms its matches, the
// next takes over when it fills, drains or leaves. A server with room for
// fewer players than a match is not where its players gather. A player
// queued on another server is handed over: the module writes a handoff (kind
// HandoffKind: the playlist, the time already waited, the rating) for the
// gather server and only then redirects the player (reason "queue"). The
// gather server counts the time already waited, for priority and for the
// widening rating window: a player who waited 4.2 s on A has waited 4.2 s
// on arrival at B.
//
// Nobody bounces. The host does not move a player within its move
// cooldown of being moved here (room.Config.MoveCooldown; a fresh
// connection is moved at once); beyond that, a player
// who arrived with a queue handoff is not moved again by gathering for
// Config.Hold, nor sent back to the server it came from for three
// heartbeats (never, if that server was draining), and a server that was
// sent players of a playlist gathers that playlist itself for Config.Hold,
// even if its own view of the registry, a heartbeat old, still names
// another server. A player whose
// match was formed and whose room is being opened is never moved. If the
// handoff cannot be written the player is not redirected and keeps its
// place.
//
// A server never seats more players than its max-load
// (fleet.Config.MaxLoad) leaves room for: each round counts the seats
// still free from the host's own load, not from the load it publishes,
// which lags, and forms only the matches that fit (a match counts as its
// number of players; a game that weighs rooms with its own LoadOf is
// approximated). The players of a playlist it gathers that it has no room
// for overflow, with their waited time, to the next server in the
// playlist's GatherOrder; if no server has room, players wait where they
// are, and are never dropped. With no fleet, a fleet of one, or a game
// without a redirect packet, every decision is local: those without room
// wait.
//
// Each server publishes the length of each playlist's queue with its
// heartbeat as the statistic "queue:<playlist>".
//
// # Drain
//
// Module implements fleet.Drainer (room.Host.UseServer registers it). A
// draining server hands every waiting player, with its waited time, and
// every newcomer who enqueues meanwhile, to the server where the playlist
// now gathers (reason "drain"), or, if no server has room for one of its
// matches, to a server with any room, to wait there. With nowhere to go,
// the waiting players are told with the game's ServerDraining packet and
// wait on. Module implements room.Releaser too: a player still waiting
// when the drain is over (it queued within its move cooldown, or just
// then) goes with its place when the host sends the rest away.
//
// # Lifecycle
//
// New checks the configuration and starts nothing. Matches are formed in
// rounds, every Config.Tick, by Run, which the application runs beside the
// host's Run and which returns when its context ends:
//
//	go host.Run(ctx)
//	go mm.Run(ctx)
//
// A Module is safe for concurrent use.
package matchmaking
