package federation

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

var tokenSecret = []byte("game-token-secret-0123456789")

func TestTokenRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	want := Token{PlayerID: "p-1", RoomID: "room-9", NodeID: "au-sydney", Expires: now.Add(time.Minute)}
	s, err := MintToken(tokenSecret, want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseToken(tokenSecret, s, now)
	if err != nil || got != want {
		t.Fatalf("ParseToken = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ParseToken(tokenSecret, s, want.Expires); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("at expiry: %v", err)
	}
	if _, err := ParseToken([]byte("another-secret-0123456789"), s, now); !errors.Is(err, ErrTokenSignature) {
		t.Fatalf("other secret: %v", err)
	}
}

func TestTokenRejects(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	good, _ := MintToken(tokenSecret, Token{PlayerID: "p", RoomID: "r", Expires: now.Add(time.Hour)})
	parts := strings.Split(good, ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"p":"admin","r":"r","e":9999999999}`))
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"empty", "", ErrTokenMalformed},
		{"no dots", "v1", ErrTokenMalformed},
		{"other version", "v2." + parts[1] + "." + parts[2], ErrTokenMalformed},
		{"no payload", "v1.." + parts[2], ErrTokenMalformed},
		{"short signature", "v1." + parts[1] + ".AAAA", ErrTokenMalformed},
		{"signature not base64", "v1." + parts[1] + "." + strings.Repeat("*", 43), ErrTokenMalformed},
		{"forged payload", "v1." + forged + "." + parts[2], ErrTokenSignature},
		{"extra part", good + ".x", ErrTokenMalformed},
		{"too long", "v1." + strings.Repeat("a", 3000) + "." + parts[2], ErrTokenMalformed},
		{"signed but not JSON", signedRaw("bm90IGpzb24"), ErrTokenMalformed},
		{"signed but no player", signedRaw(base64.RawURLEncoding.EncodeToString([]byte(`{"r":"r","e":9999999999}`))), ErrTokenMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseToken(tokenSecret, tt.token, now); !errors.Is(err, tt.want) {
				t.Fatalf("ParseToken: %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := MintToken([]byte("short"), Token{PlayerID: "p", RoomID: "r", Expires: now}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("short secret: %v", err)
	}
	if _, err := MintToken(tokenSecret, Token{RoomID: "r", Expires: now}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no player: %v", err)
	}
}

// signedRaw signs an arbitrary payload the way MintToken does.
func signedRaw(payload string) string {
	signed := tokenVersion + "." + payload
	return signed + "." + base64.RawURLEncoding.EncodeToString(tokenMAC(tokenSecret, signed))
}

func TestTURNCredentialsForm(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	// Reference value: printf '1700003600:alice' | openssl dgst -sha1 -hmac s3cret -binary | base64
	user, pass := TURNCredentials("s3cret", "alice", time.Hour, now)
	if user != "1700003600:alice" || pass != "YAFdW/YDZewZsR1QSgUk2IrfbRI=" {
		t.Fatalf("TURNCredentials = %q %q", user, pass)
	}
	if user, _ := TURNCredentials("s3cret", "", time.Hour, now); user != "1700003600" {
		t.Fatalf("without a user: %q", user)
	}
}
