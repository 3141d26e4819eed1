package room

import (
	"bytes"
	"encoding/json"
)

// splitEnvelope is JSON.Decode's fast path for the frame every client
// writes, {"type":"<ASCII name>","data":<object or array>} or
// {"type":"<ASCII name>"} with nothing between the tokens: it finds the
// type and the body without decoding the frame into an envelope through
// reflection. ok is false for any other shape, which the full decoder
// then takes, so what is accepted and what is refused is unchanged: the
// body is checked to be one valid JSON value, which makes the frame a
// valid object with those two keys.
func splitEnvelope(frame []byte) (typ string, body []byte, ok bool) {
	const head = `{"type":"`
	if !bytes.HasPrefix(frame, []byte(head)) || frame[len(frame)-1] != '}' {
		return "", nil, false
	}
	rest := frame[len(head) : len(frame)-1]
	q := bytes.IndexByte(rest, '"')
	if q <= 0 {
		return "", nil, false
	}
	for _, ch := range rest[:q] {
		if ch < 0x20 || ch >= 0x80 || ch == '\\' {
			return "", nil, false
		}
	}
	if string(rest[:q]) == msgInput {
		typ = msgInput // the most frequent, without a copy
	} else {
		typ = string(rest[:q])
	}
	rest = rest[q+1:]
	if len(rest) == 0 {
		return typ, nil, true
	}
	const data = `,"data":`
	if !bytes.HasPrefix(rest, []byte(data)) {
		return "", nil, false
	}
	body = rest[len(data):]
	// A value that starts and ends with its bracket, so that no white
	// space is around it: encoding/json leaves that out of the body.
	if len(body) < 2 || (body[0] != '{' && body[0] != '[') || (body[len(body)-1] != '}' && body[len(body)-1] != ']') || !json.Valid(body) {
		return "", nil, false
	}
	return typ, body, true
}
