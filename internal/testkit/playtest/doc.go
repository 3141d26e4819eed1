// Package playtest is the test kit's WebSocket player of a room host's
// /play endpoint: Conn speaks the host's JSON packets
// ({"type":…,"data":…}) on one connection, and Player is a player that
// says hello, keeps its welcome and follows redirects through its load
// balancer, as a real client does.
//
// It imports nothing of this module, so that any package's own tests,
// the room host's internal ones included, can use it. A Conn or a Player
// belongs to one goroutine at a time; the methods that fail the test
// (Dial, Send, Next, Hello) are for the test's goroutine, the others
// (Receive, CloseCode, Await) may run on any.
package playtest
