// Package lobby is the room-host module for private lobbies with short
// codes that work on every server of a fleet.
//
// A player sends {"type":"lobby.create"} and gets a StatePacket with a
// code of Config.CodeLength characters from Alphabet (no 0, O, 1 or I),
// claimed for its server in the whole fleet (fleet.KindLobby), so that no
// two lobbies of the fleet share a code. Friends send {"type":
// "lobby.join","data":{"code":"K7QXM"}} to whichever server the load
// balancer gave them: a server that does not hold the lobby locates the
// code, writes a handoff (kind HandoffKind: the code and the role) for
// the lobby's server and redirects the player there (reason "lobby").
// {"type":"lobby.leave"} leaves; when the host leaves, the member who
// joined first after it becomes host. The host sends {"type":
// "lobby.start"} to open a room (Kind Config.RoomKind, Data Match) for
// the members; when the room ends the lobby is open again. Every change
// is sent to the members as a full StatePacket; refusals as an
// ErrorPacket.
//
// A join typed within the host's move cooldown of connecting is carried
// out when the cooldown is over (the housekeeping of Run).
//
// # Drain
//
// Module implements fleet.Drainer (room.Host.UseServer registers it). A
// draining server hands each open lobby to another server with room: each
// member is redirected (reason "drain") with a handoff that carries the
// code, its role, the host and the members; the first to arrive
// re-creates the lobby there under the same code and claims it, the
// others join it, and the host keeps its role. A lobby whose match is
// running moves when its room ends. With nowhere to go, the members are
// told with the game's ServerDraining packet. A lobby created on a
// draining server is created on another (room.Releaser: also when the
// creation still waits here at the drain's end), and a code typed there
// while its lobby is on its way elsewhere waits for the lobby to land.
//
// A lobby stays one lobby when its members reach different servers (a
// late member is sent after a target that began draining meanwhile, or
// a draining target forwards each newcomer on): a member that arrives
// where the lobby did not land joins it where the fleet locates it; and
// of two servers that re-created it at once, the one whose claim on the
// code was replaced sends its members to the other.
//
// # Lifecycle
//
// New checks the configuration and starts nothing. Run does the
// housekeeping every Config.Tick; the application runs it beside the
// host's Run, and it returns when its context ends:
//
//	go host.Run(ctx)
//	go lobbies.Run(ctx)
//
// With no fleet bound, codes are unique on the server and every lobby is
// local. A Module is safe for concurrent use.
package lobby
