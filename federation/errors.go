package federation

import (
	"errors"
	"fmt"
	"net/http"
)

var (
	// ErrInvalidConfig is wrapped by the error a constructor returns for a
	// config it cannot use; the message names the field.
	ErrInvalidConfig = errors.New("federation: invalid config")

	// ErrUnauthorized reports a missing, malformed or unknown key (HTTP 401).
	ErrUnauthorized = errors.New("federation: unknown or missing key")

	// ErrRevoked reports a key whose node or server has been revoked. Home
	// answers it with HTTP 401, like an unknown key; an admin operation on a
	// revoked node fails with it.
	ErrRevoked = errors.New("federation: revoked")

	// ErrForbidden reports a valid key used at a door it does not open: a
	// node key at announce, a server key at join or at the admin API
	// (HTTP 403).
	ErrForbidden = errors.New("federation: key not allowed here")

	// ErrWrongNode reports a request that names a node other than the one
	// its key belongs to (HTTP 403).
	ErrWrongNode = errors.New("federation: key belongs to another node")

	// ErrNotFound reports an unknown node, server or room (HTTP 404).
	ErrNotFound = errors.New("federation: not found")

	// ErrExists reports a node id that is already taken (HTTP 409).
	ErrExists = errors.New("federation: already exists")

	// ErrRoomOwned reports a room report for a room that another server
	// reported first (HTTP 409).
	ErrRoomOwned = errors.New("federation: room belongs to another server")

	// ErrNotApproved reports a room report from a server of a node that
	// has not been approved (HTTP 403): only an approved node has rooms.
	ErrNotApproved = errors.New("federation: node not approved")

	// ErrNotAnnounced reports a room report from a server that has not
	// announced within ReapAfter (HTTP 409): its rooms were reaped; it
	// may report again after its next announce.
	ErrNotAnnounced = errors.New("federation: server has not announced recently")

	// ErrTooManyRooms reports a new room from a server that already
	// reports HomeConfig.MaxRoomsPerServer open rooms (HTTP 409).
	ErrTooManyRooms = errors.New("federation: server has too many rooms")

	// ErrTooManyServers reports a join on a node that already has
	// HomeConfig.MaxServersPerNode servers (HTTP 409).
	ErrTooManyServers = errors.New("federation: node has too many servers")

	// ErrInvalid is wrapped by every validation error of a request body or
	// an admin call; the message names the field (HTTP 400).
	ErrInvalid = errors.New("federation: invalid request")

	// ErrTooLarge reports a request body over the limit (HTTP 413).
	ErrTooLarge = errors.New("federation: request body too large")

	// ErrRateLimited reports a key or address over its rate limit
	// (HTTP 429).
	ErrRateLimited = errors.New("federation: rate limited")

	// ErrUnavailable reports that the register could not be read or written
	// (HTTP 503); the request may be retried.
	ErrUnavailable = errors.New("federation: register unavailable")

	// ErrNotJoined is returned by Node.ReportRoom before the node's server
	// has its key (before Run has joined or loaded it).
	ErrNotJoined = errors.New("federation: server has not joined")

	// ErrRunning is returned by a second concurrent call of Run.
	ErrRunning = errors.New("federation: already running")

	// ErrTokenMalformed reports a game-server token that cannot be parsed.
	ErrTokenMalformed = errors.New("federation: malformed token")

	// ErrTokenSignature reports a game-server token whose signature does
	// not verify under the secret.
	ErrTokenSignature = errors.New("federation: bad token signature")

	// ErrTokenExpired reports a game-server token past its expiry.
	ErrTokenExpired = errors.New("federation: token expired")
)

// HomeError is an error answer from home, as the Node agent and the Placer
// see it. It unwraps to the sentinel matching its status (ErrUnauthorized
// for 401, ErrForbidden for 403, ...), so errors.Is works across the wire.
type HomeError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the machine-readable code of the JSON error body.
	Code string
	// Message is the human-readable message of the JSON error body.
	Message string
}

// Error implements error.
func (e *HomeError) Error() string {
	return fmt.Sprintf("federation: home answered %d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap returns the sentinel for the error's code or status.
func (e *HomeError) Unwrap() error {
	for _, m := range errorCodes {
		if m.code == e.Code {
			return m.err
		}
	}
	switch e.Status {
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusTooManyRequests:
		return ErrRateLimited
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusBadRequest:
		return ErrInvalid
	}
	return nil
}

// errorCodes maps sentinels to their HTTP status and wire code, in the
// order they are checked.
var errorCodes = []struct {
	err    error
	status int
	code   string
}{
	{ErrRevoked, http.StatusUnauthorized, "revoked"},
	{ErrUnauthorized, http.StatusUnauthorized, "unauthorized"},
	{ErrWrongNode, http.StatusForbidden, "wrong_node"},
	{ErrForbidden, http.StatusForbidden, "forbidden"},
	{ErrNotFound, http.StatusNotFound, "not_found"},
	{ErrExists, http.StatusConflict, "exists"},
	{ErrRoomOwned, http.StatusConflict, "room_owned"},
	{ErrTooManyServers, http.StatusConflict, "too_many_servers"},
	{ErrNotApproved, http.StatusForbidden, "not_approved"},
	{ErrNotAnnounced, http.StatusConflict, "not_announced"},
	{ErrTooManyRooms, http.StatusConflict, "too_many_rooms"},
	{ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{ErrInvalid, http.StatusBadRequest, "invalid"},
	{ErrRateLimited, http.StatusTooManyRequests, "rate_limited"},
	{ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
}

// statusOf returns the HTTP status and wire code for err.
func statusOf(err error) (int, string) {
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			return m.status, m.code
		}
	}
	return http.StatusInternalServerError, "internal"
}

func errorsIsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
