package lobby

import "errors"

var (
	// ErrConfig is wrapped by every error about a Config that New
	// refuses.
	ErrConfig = errors.New("lobby: invalid config")

	// ErrNoLobby is reported for a code that names no open lobby.
	ErrNoLobby = errors.New("lobby: no lobby with this code")

	// ErrBadCode is reported for a code that cannot be a lobby code.
	ErrBadCode = errors.New("lobby: malformed code")

	// ErrInLobby is reported to a player who creates or joins a lobby
	// while in another one.
	ErrInLobby = errors.New("lobby: already in a lobby")

	// ErrNotInLobby is reported to a player who leaves or starts without
	// being in a lobby.
	ErrNotInLobby = errors.New("lobby: not in a lobby")

	// ErrNotHost is reported to a member who is not the host and asks to
	// start the match.
	ErrNotHost = errors.New("lobby: only the host can start")

	// ErrFull is reported to a player who joins a lobby at
	// Config.MaxMembers.
	ErrFull = errors.New("lobby: lobby is full")

	// ErrPlaying is reported when the lobby's match is already running.
	ErrPlaying = errors.New("lobby: match already running")

	// ErrUnavailable is reported when the fleet cannot be asked where a
	// lobby is, or no code could be claimed; the player may try again.
	ErrUnavailable = errors.New("lobby: try again later")

	// ErrLocked is reported to a client address that tried
	// Config.CodeFailures wrong codes within Config.CodeLockout: its joins
	// are refused until the window ends.
	ErrLocked = errors.New("lobby: too many wrong codes; try again later")

	// ErrNotAttached is returned by Run for a module not added to a host
	// with room.Host.Use.
	ErrNotAttached = errors.New("lobby: module not attached to a host")
)
