package lobby

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/muster-gg/muster/fleet"
)

// Alphabet is the characters of lobby codes: letters and digits without
// those easily mistaken for one another (0, O, 1, I). It has 32
// characters, so a 5-character code is one of 33,554,432.
const Alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// newCode returns a random code of n characters from Alphabet.
func newCode(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails
	for i := range b {
		b[i] = Alphabet[b[i]&31]
	}
	return string(b)
}

// NormalizeCode returns code as a lobby code — trimmed and upper-cased —
// and whether it is one: 4 to 6 characters of Alphabet.
func NormalizeCode(code string) (string, bool) {
	code = strings.ToUpper(strings.TrimSpace(code))
	if len(code) < 4 || len(code) > 6 {
		return "", false
	}
	for i := 0; i < len(code); i++ {
		if strings.IndexByte(Alphabet, code[i]) < 0 {
			return "", false
		}
	}
	return code, true
}

// uniqueClaimer is the part of a fleet that claims an id for one server
// only; *fleet.Fleet has it.
type uniqueClaimer interface {
	ClaimUnique(ctx context.Context, kind, id string) error
}

// claim finds a free code and claims it, reserved locally until the
// caller drops the reservation.
func (m *Module) claim(ctx context.Context) (string, error) {
	f := m.kit.Env.Fleet()
	uc, _ := f.(uniqueClaimer)
	for range m.attempts {
		code := m.gen()
		m.mu.Lock()
		taken := m.lobbies[code] != nil || m.reserved[code]
		if !taken {
			m.reserved[code] = true
		}
		m.mu.Unlock()
		if taken {
			continue
		}
		if uc == nil {
			return code, nil // no fleet: unique on this server
		}
		err := uc.ClaimUnique(ctx, fleet.KindLobby, code)
		switch {
		case err == nil:
			return code, nil
		case errors.Is(err, fleet.ErrHeld):
			m.unreserve(code)
			continue
		case f.Alone():
			// Serving alone through a backplane outage: the claim is held
			// and re-asserted when the backplane returns.
			f.Claim(ctx, fleet.KindLobby, code)
			return code, nil
		default:
			m.unreserve(code)
			return "", fmt.Errorf("claim lobby code: %w", err)
		}
	}
	return "", fmt.Errorf("claim lobby code: %d codes taken", m.attempts)
}

// unreserve drops the local reservation of code.
func (m *Module) unreserve(code string) {
	m.mu.Lock()
	delete(m.reserved, code)
	m.mu.Unlock()
}

// release gives up the claim on a closed lobby's code. It may run on a
// step worker (RoomEnded), so it only queues the release: the fleet
// writes it from its own goroutine.
func (m *Module) release(_ context.Context, code string) {
	if f := m.kit.Env.Fleet(); f != nil {
		f.ReleaseLater(fleet.KindLobby, code)
	}
}
