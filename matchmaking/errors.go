package matchmaking

import "errors"

var (
	// ErrConfig is wrapped by every error about a Config or a Playlist
	// that New refuses.
	ErrConfig = errors.New("matchmaking: invalid config")

	// ErrUnknownPlaylist is reported to a player who enqueues on a playlist
	// the server does not have.
	ErrUnknownPlaylist = errors.New("matchmaking: unknown playlist")

	// ErrSeated is reported to a player who enqueues while seated in a
	// room.
	ErrSeated = errors.New("matchmaking: player is in a room")

	// ErrMatched is reported to a player who enqueues or leaves the queue
	// after it was matched or while it is being moved.
	ErrMatched = errors.New("matchmaking: player already matched")

	// ErrRating refuses a queue request when Config.Ratings fails for
	// the player.
	ErrRating = errors.New("matchmaking: no rating for the player")

	// ErrNotAttached is returned by Run for a module not added to a host
	// with room.Host.Use.
	ErrNotAttached = errors.New("matchmaking: module not attached to a host")
)
