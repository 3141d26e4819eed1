package federation

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// TURNCredentials mints time-limited TURN credentials in the form coturn
// accepts with use-auth-secret (the "TURN REST API"): the username is
// "<unix expiry>:<user>" (just the expiry when user is empty) and the
// password is base64(HMAC-SHA1(secret, username)). The relay checks them
// with the same static-auth-secret and refuses them after the expiry,
// now+ttl. coturn's default separator ':' is assumed.
func TURNCredentials(secret, user string, ttl time.Duration, now time.Time) (username, password string) {
	username = strconv.FormatInt(now.Add(ttl).Unix(), 10)
	if user != "" {
		username += ":" + user
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(username))
	return username, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ICEServer is one entry of a WebRTC RTCIceServer list.
type ICEServer struct {
	// URLs are stun:, turn: (or turns:) URLs.
	URLs []string `json:"urls"`
	// Username and Credential authenticate to a TURN server; empty for
	// STUN.
	Username   string `json:"username,omitempty"`
	Credential string `json:"credential,omitempty"`
}

// iceURL returns addr as a scheme: URL ("turn:host:port"), leaving an
// address that already has one of the schemes alone.
func iceURL(scheme, addr string) string {
	for _, s := range []string{"turn:", "turns:", "stun:", "stuns:"} {
		if strings.HasPrefix(addr, s) {
			return addr
		}
	}
	return scheme + ":" + addr
}
