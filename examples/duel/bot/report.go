package bot

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what happened to a bot, as the bot saw it. Bot.Report returns
// a copy that the caller owns.
type Report struct {
	// Player is the bot's player id.
	Player string
	// Nodes is the server of each connection that was welcomed, in order.
	Nodes []string
	// Redirects are the redirects the bot followed.
	Redirects []Redirect
	// Rooms are the rooms the bot was seated in, in order.
	Rooms []Room
	// Waits are the queue.waiting packets: where the bot waited and how
	// long it had already waited then.
	Waits []Wait
	// Lobby is the last lobby state the bot was sent; its Code is "" when
	// the bot is in no lobby.
	Lobby Lobby
	// Tickets counts the tickets the bot asked the server for (POST
	// <url>/ticket). A redirect's own ticket is not counted: the bot
	// reconnects with it.
	Tickets int
	// Failures are the connection attempts that did not end in a welcome.
	Failures []Failure
	// Drops are the welcomed connections that ended without a redirect and
	// without the bot asking: a server that stopped or died, a network
	// error.
	Drops []Drop
	// Reconnects are the gaps between the end of a connection (a redirect,
	// a drop, Bot.Drop) and the welcome of the next one.
	Reconnects []Reconnect
	// Rejoins are the gaps between the end of a connection while the bot
	// was seated and its return to that room.
	Rejoins []Rejoin
	// Requeues counts the queue messages the bot sent again by itself: after
	// a drop while waiting, after a drain redirect that came before its
	// queue request was confirmed (the request crossed the redirect a
	// draining server sends at its drain's end), or when a queue place it
	// was redirected with
	// was not confirmed by the new server within Config.Confirm.
	Requeues int
	// Draining lists the servers that told the bot they were draining.
	Draining []string
	// Errors are the queue.error and lobby.error messages the bot was sent.
	Errors []string
	// Events is the bot's log, oldest first.
	Events []Event
}

// Redirect is a redirect the bot followed.
type Redirect struct {
	At     time.Time // when the bot read it
	From   string    // the server that sent it
	To     string    // the server it names
	Param  string    // the query parameter naming a server
	Reason string    // rejoin, queue, lobby, drain or migrate
	// Pause is, for a redirect the bot followed while seated (its room
	// moved: reason migrate), the time from the room's last state before
	// the redirect to its first state after; 0 until that state comes,
	// and for a redirect out of a room.
	Pause time.Duration
}

// Room is a room the bot was seated in.
type Room struct {
	// ID is the room's id on its server.
	ID string
	// Kind is the room's kind: the playlist, or "lobby".
	Kind string
	// Node is the server the room runs on: the last that welcomed the bot
	// into it (a room moves with a drain).
	Node string
	// Started is when the bot learned of its seat.
	Started time.Time
	// Queued is the time from the bot's queue message to its seat, for a
	// room that a queue formed; 0 otherwise.
	Queued time.Duration
	// Ended is when the room ended for the bot, zero while it is seated.
	Ended time.Time
	// Reason is the room's end reason ("won by …", "abandoned",
	// "server-drained"), "left" when the bot left it, or "lost" when the
	// bot came back after a drop and was no longer seated anywhere.
	Reason string
	// Inputs counts the inputs the bot sent in the room.
	Inputs int
	// Snapshots counts the state packets the bot received in the room.
	Snapshots int
	// LastState is when the bot received the room's last state packet.
	LastState time.Time
	// Gap is the longest time between two state packets of the room: the
	// pause the bot saw when its room moved to another server (a
	// redirect, reason migrate) or its connection dropped.
	Gap time.Duration
	// Step is the room's step in its last state packet.
	Step uint64
	// Rewind is the most steps the room went back between two state
	// packets: the steps lost when it resumed from a checkpoint on
	// another server after its own died.
	Rewind uint64
	// Regained counts the times the bot, welcomed without the room after
	// a drop, gave it up for lost and was later welcomed back into it (its
	// server died and another resumed it).
	Regained int
}

// Wait is a queue.waiting packet: the bot waits in a playlist's queue on a
// server and had already waited Waited (on earlier servers too).
type Wait struct {
	At       time.Time     // when the bot read the packet
	Node     string        // the server the bot waits on
	Playlist string        // the playlist it waits for
	Waited   time.Duration // the time it had waited, on every server
}

// Lobby is a lobby.state packet.
type Lobby struct {
	At      time.Time // when the bot read the packet
	Code    string    // the lobby's code
	Host    string    // the host's player id
	Members []string  // the members' player ids, in the order they joined
	Playing bool      // whether the lobby's match runs
	Room    string    // the running match's room id
	// Node is the server the lobby lives on.
	Node string
}

// Failure is a connection attempt that did not end in a welcome.
type Failure struct {
	At time.Time // when the attempt failed
	// Stage is where it failed: "ticket", "dial" or "hello".
	Stage string
	// Node is the server the bot asked for, "" for any.
	Node string
	Err  string // the error
}

// Drop is a welcomed connection that ended without a redirect.
type Drop struct {
	At   time.Time // when the bot noticed
	Node string    // the server that had welcomed the connection
	// Code is the close code, or -1 when the connection ended without one.
	Code   int
	Reason string // the close reason, or the read error
}

// Reconnect is the gap between two welcomed connections.
type Reconnect struct {
	// Cause is "redirect", "drop" or "asked" (Bot.Drop).
	Cause string
	// Took is the time from the end of one connection to the welcome of the
	// next, ticket and failed attempts included.
	Took time.Duration
	// Attempts is the number of connection attempts it took.
	Attempts int
}

// Rejoin is a return to a room after a connection ended.
type Rejoin struct {
	Room string // the room the bot came back to
	// Took is the time from the end of the connection to being back in the
	// room: redirects, tickets and failed attempts included.
	Took time.Duration
	// Connections is the number of connections it took (2 or more when a
	// server sent the bot on to the room's server).
	Connections int
}

// Event is one line of a bot's log.
type Event struct {
	At     time.Time // when it happened
	Kind   string    // what: welcome, redirect, room, room_end, waiting, dropped, failure, …
	Node   string    // the server concerned, if any
	Detail string    // the rest, for people
}

// Room returns the room the bot is seated in, if any.
func (r Report) Room() (Room, bool) {
	if n := len(r.Rooms); n > 0 && r.Rooms[n-1].Ended.IsZero() {
		return r.Rooms[n-1], true
	}
	return Room{}, false
}

// Node returns the server of the bot's last welcomed connection.
func (r Report) Node() string {
	if n := len(r.Nodes); n > 0 {
		return r.Nodes[n-1]
	}
	return ""
}

// Ended returns the number of rooms that ended for the bot.
func (r Report) Ended() int {
	n := 0
	for _, rm := range r.Rooms {
		if !rm.Ended.IsZero() {
			n++
		}
	}
	return n
}

// AlwaysConnected reports whether the bot always had a working
// connection: no connection attempt failed and no connection dropped.
func (r Report) AlwaysConnected() bool { return len(r.Failures) == 0 && len(r.Drops) == 0 }

// Log formats the bot's events, one a line, with times relative to the
// first.
func (r Report) Log() string {
	var b strings.Builder
	if len(r.Events) == 0 {
		return ""
	}
	t0 := r.Events[0].At
	for _, e := range r.Events {
		fmt.Fprintf(&b, "%s %8.3fs %-10s %-12s %s\n", r.Player, e.At.Sub(t0).Seconds(), e.Kind, e.Node, e.Detail)
	}
	return b.String()
}

// Quantiles formats the 50th and 90th percentiles and the maximum of ds,
// rounded to the millisecond, and their count ("none" for no durations):
// a line of a summary of many bots' reports, such as their Rejoins' Took.
// It does not change ds.
func Quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1))].Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v, p90 %v, max %v (n=%d)", q(0.5), q(0.9), ds[len(ds)-1].Round(time.Millisecond), len(ds))
}

func (r Report) clone() Report {
	r.Nodes = slices.Clone(r.Nodes)
	r.Redirects = slices.Clone(r.Redirects)
	r.Rooms = slices.Clone(r.Rooms)
	r.Waits = slices.Clone(r.Waits)
	r.Lobby.Members = slices.Clone(r.Lobby.Members)
	r.Failures = slices.Clone(r.Failures)
	r.Drops = slices.Clone(r.Drops)
	r.Reconnects = slices.Clone(r.Reconnects)
	r.Rejoins = slices.Clone(r.Rejoins)
	r.Draining = slices.Clone(r.Draining)
	r.Errors = slices.Clone(r.Errors)
	r.Events = slices.Clone(r.Events)
	return r
}
