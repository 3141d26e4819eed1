package room

import "errors"

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

	// ErrBadPacket is returned for a frame the codec cannot decode.
	ErrBadPacket = errors.New("room: bad packet")
)
