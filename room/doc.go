// Package room is the room host: it runs a game's match rooms in memory,
// steps them at the game's fixed rate on a pool of step workers, and
// serves the players' WebSocket connections.
//
// A game implements Game (and optionally BeforeStepper, AfterStepper,
// Admitter, RoomEnder, Loader, Redirector, DrainNotifier, and the
// presence hooks Awayer and Returner; New refuses a game with a method
// named like one of these hooks but of another signature, which would
// never be called, and a Sim that is a plain value, whose changes would
// be lost). A game's timers are Timers in its Sim, counting the room's
// steps. New makes a Host; Use adds
// modules such as matchmaking and lobbies (and refuses, likewise, a module
// whose method is named like an optional module interface's but does not
// implement it), UseServer binds capacity and drain, UseFleet binds
// player claims, rejoin from anywhere and handoffs. With a fleet bound a
// player has one connection and one seat in the whole fleet: a newer
// connection on another server closes this one (StatusReplaced) within a
// heartbeat, and OpenRoom and Seat claim their players before seating
// them, failing with ErrSeated for one another live server holds.
// Without a Redirector the host moves players with its own
// RedirectPacket (a game opts out with a Redirect that returns nil);
// without a DrainNotifier it sends DrainingPacket. AddRoomWatcher and
// AddTicketChecker plug in what a federation needs: every room's state,
// and tickets the host's own Tickets do not know.
//
// # Stepping
//
// There is no goroutine or timer per room. At each tick the rooms are cut
// into chunks that the workers (one per core by default) claim; a worker
// with nothing left takes rooms still waiting in the others' chunks. A room
// is stepped by one worker at a time, a slow room delays only itself, and a
// room that panics is ended and logged. Two of the workers keep time
// themselves, so a thread the OS runs late holds back no tick. Events
// (joins, leaves, inputs) are queued and applied in arrival order before a
// room's next step, so the output of N workers is the output of one.
//
// # Transport
//
// A client connects to Handler with ?ticket=, says hello ("new" or
// "rejoin") and is placed: back in its seat, sent to the server running its
// room, or handed to the modules. Tickets are signed, valid 30 seconds,
// redeemed once across the fleet and refused by another cluster
// (NewTickets and NewClusterTickets mint them in a sign-in service). Bad input closes only that connection, with a close code that
// says why; a connection sending more than Limits.Messages is closed with
// 4005. Limits also bound, per client address (an IPv6 client by its
// /64), how fast connections are opened, how many are held open at once,
// and how many bad tickets are tried; a connection over them is answered
// 429.
//
// # Step workers do no I/O
//
// The game's hooks, RoomEndHandler, RoomWatcher and RoomEnder run on the
// step workers: they must not block. The host itself never calls the
// backplane there, nor waits for the fleet: a room's end and a player's
// leave queue their claims' releases, which Run's goroutine hands to
// Fleet.ReleaseLater for the fleet's own goroutine to write.
//
// # Lifecycle
//
// New starts nothing. Run steps the rooms and owns every connection; when
// its context ends it closes them all and returns once every goroutine it
// started has ended. A Host is safe for concurrent use; the game's hooks
// for one room never run concurrently.
package room
