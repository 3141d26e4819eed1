package federation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// TestTURNCredentialsWithCoturn: credentials minted here are accepted by a
// real coturn in use-auth-secret mode; a wrong password, another secret
// and an expired credential are refused.
func TestTURNCredentialsWithCoturn(t *testing.T) {
	t.Parallel()
	const secret = "turn-shared-secret-0123456789"
	turn := testbin.StartCoturn(t, secret)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()

	user, pass := TURNCredentials(secret, "player-42", time.Hour, now)
	if err := turn.Allocate(ctx, t, user, pass); err != nil {
		t.Fatalf("allocation with good credentials: %v\n%s", err, turn.Log())
	}
	refused := []struct {
		name, user, pass string
	}{
		{"wrong password", user, pass[:len(pass)-4] + "AAA="},
		{"minted with another secret", user, second(TURNCredentials("another-secret", "player-42", time.Hour, now))},
		{"expired", first(TURNCredentials(secret, "player-42", -time.Minute, now)), second(TURNCredentials(secret, "player-42", -time.Minute, now))},
	}
	for _, tt := range refused {
		if err := turn.Allocate(ctx, t, tt.user, tt.pass); err == nil {
			t.Errorf("%s: allocation succeeded", tt.name)
		}
	}
	// Refused by the server's authentication, not by anything else.
	if !strings.Contains(turn.Log(), "check_stun_auth") {
		t.Errorf("coturn logged no authentication refusal:\n%s", turn.Log())
	}
}

func first(a, _ string) string  { return a }
func second(_, b string) string { return b }
