package lobby

import (
	"crypto/rand"
	"strings"
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
