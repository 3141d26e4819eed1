package bot

import (
	"errors"
	"fmt"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/room"
)

// ErrStopped is returned by Wait when the bot's Run has returned before the
// condition held.
var ErrStopped = errors.New("bot: stopped")

// ErrRunTwice is returned by Run when the bot has already run.
var ErrRunTwice = errors.New("bot: Run called twice")

// The room host's close codes the bot tells apart, as package room defines
// them. Those that end a bot's run instead of being retried: the bot or the
// server speaks another protocol (StatusBadHello, StatusBadPacket,
// StatusUnknownType), or another connection took the player's place
// (StatusReplaced).
const (
	StatusBadHello    = room.StatusBadHello
	StatusBadTicket   = room.StatusBadTicket
	StatusBadPacket   = room.StatusBadPacket
	StatusUnknownType = room.StatusUnknownType
	StatusReplaced    = room.StatusReplaced
	StatusLimited     = room.StatusLimited
)

// CloseError is a close by the server for a protocol error, such as 4003
// for a message type the server does not handle (a game without the
// matchmaking or lobby module). Run returns it.
type CloseError struct {
	// Node is the server that closed the connection.
	Node string
	// Code is the WebSocket close code.
	Code websocket.StatusCode
	// Reason is the close reason the server gave.
	Reason string
}

// Error implements error.
func (e *CloseError) Error() string {
	return fmt.Sprintf("bot: closed by %s with %d: %s", e.Node, int(e.Code), e.Reason)
}

// fatal reports whether a close code ends the run: retrying cannot help.
func fatal(code websocket.StatusCode) bool {
	switch code {
	case StatusBadHello, StatusBadPacket, StatusUnknownType, StatusReplaced:
		return true
	}
	return false
}
