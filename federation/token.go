package federation

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Token is what a game-server token carries: home mints one when it sends
// a player to a room, and the node that runs the room checks it with the
// shared token secret before letting the player in.
type Token struct {
	// PlayerID is the player the token admits. Required.
	PlayerID string
	// RoomID is the room the token admits to. Required.
	RoomID string
	// NodeID, when set, is the only node that should accept the token;
	// the node compares it with its own id.
	NodeID string
	// Expires is when the token stops being valid (second precision).
	Expires time.Time
}

const (
	tokenVersion   = "v1"
	maxTokenLen    = 2048
	minTokenSecret = 16
)

type tokenPayload struct {
	P string `json:"p"`
	R string `json:"r"`
	N string `json:"n,omitempty"`
	E int64  `json:"e"`
	// J is a nonce, so that two tokens for one player, room and second
	// differ and each can be redeemed once.
	J string `json:"j,omitempty"`
}

// MintToken returns t as "v1.<payload>.<signature>", base64url without
// padding, signed with HMAC-SHA256 under secret (at least 16 bytes).
func MintToken(secret []byte, t Token) (string, error) {
	switch {
	case len(secret) < minTokenSecret:
		return "", fmt.Errorf("%w: token secret must be at least %d bytes", ErrInvalidConfig, minTokenSecret)
	case t.PlayerID == "" || t.RoomID == "":
		return "", fmt.Errorf("%w: token needs a player id and a room id", ErrInvalid)
	case t.Expires.Unix() <= 0:
		return "", fmt.Errorf("%w: token needs an expiry", ErrInvalid)
	}
	var nonce [9]byte
	_, _ = rand.Read(nonce[:])
	data, err := json.Marshal(tokenPayload{P: t.PlayerID, R: t.RoomID, N: t.NodeID, E: t.Expires.Unix(), J: base64.RawURLEncoding.EncodeToString(nonce[:])})
	if err != nil {
		return "", err
	}
	signed := tokenVersion + "." + base64.RawURLEncoding.EncodeToString(data)
	s := signed + "." + base64.RawURLEncoding.EncodeToString(tokenMAC(secret, signed))
	if len(s) > maxTokenLen {
		return "", fmt.Errorf("%w: token longer than %d bytes", ErrInvalid, maxTokenLen)
	}
	return s, nil
}

func tokenMAC(secret []byte, signed string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signed))
	return m.Sum(nil)
}

// ParseToken checks a token minted by MintToken with the same secret and
// returns what it carries: ErrTokenMalformed, ErrTokenSignature or
// ErrTokenExpired (at or after Expires by now) when it is not valid. The
// signature is checked before anything in the payload is believed.
func ParseToken(secret []byte, s string, now time.Time) (Token, error) {
	if len(secret) < minTokenSecret {
		return Token{}, fmt.Errorf("%w: token secret must be at least %d bytes", ErrInvalidConfig, minTokenSecret)
	}
	if len(s) > maxTokenLen {
		return Token{}, ErrTokenMalformed
	}
	version, rest, ok := strings.Cut(s, ".")
	if !ok || version != tokenVersion {
		return Token{}, ErrTokenMalformed
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || payload == "" {
		return Token{}, ErrTokenMalformed
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(mac) != sha256.Size {
		return Token{}, ErrTokenMalformed
	}
	if !hmac.Equal(mac, tokenMAC(secret, version+"."+payload)) {
		return Token{}, ErrTokenSignature
	}
	data, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Token{}, ErrTokenMalformed
	}
	var p tokenPayload
	if err := json.Unmarshal(data, &p); err != nil || p.P == "" || p.R == "" || p.E <= 0 {
		return Token{}, ErrTokenMalformed
	}
	t := Token{PlayerID: p.P, RoomID: p.R, NodeID: p.N, Expires: time.Unix(p.E, 0)}
	if !now.Before(t.Expires) {
		return Token{}, ErrTokenExpired
	}
	return t, nil
}
