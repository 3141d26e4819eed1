package room

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrClosed is returned by a Host or Room after it was closed or ended.
	ErrClosed = errors.New("room: closed")

	// ErrDraining is returned when a draining server is asked for a new
	// room.
	ErrDraining = errors.New("room: server is draining")

	// ErrSeated is returned when a player to be seated already has a seat.
	ErrSeated = errors.New("room: player already seated")

	// ErrTicket is returned for a ticket that is malformed, forged,
	// expired or already redeemed.
	ErrTicket = errors.New("room: invalid ticket")

	// ErrConfig is wrapped by every configuration error of New: a value
	// out of range, or an unknown Limits.Store.
	ErrConfig = errors.New("room: invalid config")

	// ErrBadPacket is returned for a frame the codec cannot decode.
	ErrBadPacket = errors.New("room: bad packet")

	// ErrCooldown is returned by Move for a player who arrived less than
	// the move cooldown ago.
	ErrCooldown = errors.New("room: player arrived too recently to move")

	// ErrNoRedirect is returned by Move when the game has no redirect
	// packet.
	ErrNoRedirect = errors.New("room: the game does not redirect")

	// ErrGone is returned by ModuleHost.MovePlayer when the player to move
	// is no longer connected here.
	ErrGone = errors.New("room: player not connected")

	// ErrHook is wrapped by New's error for a game with a method named
	// like an optional hook (BeforeSteps, AfterSteps, RoomEnded, Admit,
	// LoadOf, Redirect, ServerDraining, PlayerAway, PlayerBack, Snapshot,
	// Restore) that does not implement it: the host would never call it.
	// The error names the method, its signature and the one wanted.
	ErrHook = errors.New("room: game hook does not match")

	// ErrModuleHook is wrapped by Use's error for a module with a method
	// named like one of an optional module interface's (Run,
	// MessageTypes, HandleMessage, Arrived, Disconnected, RoomEnded,
	// RoomChanged, Release, MoveOut, MoveIn, Drain, DrainLast) that does
	// not implement the interface: the host would never call it. The
	// error names the module's type, the method, its signature and the
	// one wanted, or the method the interface also needs.
	ErrModuleHook = errors.New("room: module hook does not match")

	// ErrSimKind is wrapped by New's error for a game whose Sim is a
	// plain value (a struct, an array, a number, a string, a slice):
	// Room.Sim returns it as a copy, so what the hooks change is lost.
	// The error names the fix: a pointer or a map.
	ErrSimKind = errors.New("room: Sim is a value the hooks cannot change")
)

// configError names the config.yml key (under muster.room) and its
// environment variable.
func configError(key, format string, args ...any) error {
	env := "MUSTER__ROOM__" + strings.NewReplacer("-", "_", ".", "__").Replace(strings.ToUpper(key))
	return fmt.Errorf("%w: muster.room.%s (%s): %s", ErrConfig, key, env, fmt.Sprintf(format, args...))
}
