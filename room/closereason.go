package room

import (
	"strings"
	"unicode/utf8"
)

// truncate cuts s to at most n bytes, at the start of a rune, so that
// what is left of valid UTF-8 is valid UTF-8.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxCloseReason is the most bytes of reason a close frame carries: 125 of
// payload, less the code's two.
const maxCloseReason = 123

// closeReason makes reason fit a close frame: valid UTF-8, which RFC 6455
// requires of it (a browser, or the relay, fails a connection whose close
// reason is not, and the player loses the code), and at most
// maxCloseReason bytes. It cuts first, so that a long reason (a packet
// type up to the read limit) is not mended whole.
func closeReason(reason string) string {
	return truncate(strings.ToValidUTF8(truncate(reason, maxCloseReason), "\uFFFD"), maxCloseReason)
}
