// Package uid makes the random part of ids that must be unique across a
// fleet and over restarts, such as the ids of the rooms a server opens.
package uid

import (
	"crypto/rand"
	"encoding/base32"
)

// tagEncoding is lowercase base32 without padding: letters and digits
// only, safe in a URL, a log line, a Redis key or a file name.
var tagEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Tag returns 10 random characters of lowercase base32 (50 bits). A
// process marks the ids it numbers with one tag: ids of a million processes
// share a tag with a chance of under one in two thousand.
func Tag() string {
	var b [7]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return tagEncoding.EncodeToString(b[:])[:10]
}
