package room

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/muster-gg/muster/fleet"
)

// PathMove is where a server takes the rooms another server of its fleet
// moves to it (MoveHandler): a POST of the room's signed snapshot to the
// server's internal address (muster.server.fleet.internal-address).
const PathMove = "/muster/room/move"

// MoveHandler returns the endpoint at PathMove that takes a room moved
// here by a draining server of the fleet: POST, the body the room's
// snapshot signed with the fleet's key. It answers 204 once the room runs
// here, 409 with the reason when it refuses the room (a snapshot not
// signed with this fleet's key, for another server, expired, too large,
// one the game cannot read; a draining or stopping server), and 405 for
// another method. Serve it on the address the fleet publishes as this
// server's internal address.
func (h *Host[Sim, Input, Player]) MoveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "move: POST a room snapshot", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(h.cfg.Migrate.MaxBytes)))
		if err != nil {
			http.Error(w, fmt.Sprintf("move: %v: body over %d bytes or cut", ErrSnapshot, h.cfg.Migrate.MaxBytes), http.StatusConflict)
			return
		}
		if err := h.receiveRoom(r.Context(), body); err != nil {
			h.logger.Warn("refused a room moved here", "err", err)
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// httpSendRoom posts a sealed snapshot to server to's PathMove. An answer
// of 409 is a refusal (ErrSnapshot); any other failure leaves it unknown
// whether the room was taken.
func httpSendRoom(client *http.Client) func(ctx context.Context, to fleet.Node, sealed []byte) error {
	return func(ctx context.Context, to fleet.Node, sealed []byte) error {
		url := "http://" + to.InternalAddress + PathMove
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(sealed))
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSnapshot, err)
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("move to %s: %w", to.ID, err)
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		switch resp.StatusCode {
		case http.StatusNoContent:
			return nil
		case http.StatusConflict, http.StatusNotFound, http.StatusMethodNotAllowed:
			return fmt.Errorf("%w by %s: %s", ErrSnapshot, to.ID, strings.TrimSpace(string(msg)))
		default:
			return fmt.Errorf("move to %s: %w: %s", to.ID, errors.New(resp.Status), strings.TrimSpace(string(msg)))
		}
	}
}
