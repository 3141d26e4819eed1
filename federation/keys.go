package federation

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
)

// Keys are 256 random bits, base64url without padding, behind a prefix
// that tells a person which kind they hold. Home keeps only SHA-256
// hashes of them.
const (
	nodeKeyPrefix   = "mfn_"
	serverKeyPrefix = "mfs_"
	keyBytes        = 32
)

type keyKind string

const (
	kindNode   keyKind = "node"
	kindServer keyKind = "server"
)

func (k keyKind) prefix() string {
	if k == kindNode {
		return nodeKeyPrefix
	}
	return serverKeyPrefix
}

// newKey returns a fresh key of the kind.
func newKey(kind keyKind) string {
	var b [keyBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return kind.prefix() + base64.RawURLEncoding.EncodeToString(b[:])
}

// keyKindOf returns the kind named by key's prefix when key is well formed.
func keyKindOf(key string) (keyKind, bool) {
	for _, k := range []keyKind{kindNode, kindServer} {
		if validKeyFormat(key, k) {
			return k, true
		}
	}
	return "", false
}

func validKeyFormat(key string, kind keyKind) bool {
	rest, ok := strings.CutPrefix(key, kind.prefix())
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(keyBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

// keyHash is the hex SHA-256 of a key: the register's index.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// hashesEqual compares two hex hashes in constant time.
func hashesEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// bearer returns the token of an Authorization: Bearer header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
