package room

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Codec turns frames into messages and packets into frames. JSON is the
// default; a game may plug in another (a binary one sets Binary).
type Codec interface {
	// Decode splits an incoming frame into its type and body.
	Decode(frame []byte) (typ string, body []byte, err error)
	// Unmarshal decodes a message body into v.
	Unmarshal(body []byte, v any) error
	// Encode encodes an outgoing packet into one frame.
	Encode(p Packet) ([]byte, error)
	// Binary reports whether frames are sent as binary messages.
	Binary() bool
}

// JSON is the default codec. An incoming frame is an object
// {"type": "...", "data": ...}; an outgoing packet is the game's value
// encoded as JSON (by convention an object with a "type" field).
//
// Decode and Unmarshal read the forms clients write, a plain envelope and
// a flat struct body such as an input, without encoding/json's
// reflection (codecfast.go, codecflat.go); every other frame and type
// goes to encoding/json, and what is accepted, and what a frame decodes
// to, is encoding/json's answer either way.
type JSON struct{}

// Decode implements Codec.
func (JSON) Decode(frame []byte) (string, []byte, error) {
	if typ, body, ok := splitEnvelope(frame); ok {
		return typ, body, nil
	}
	var env struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(frame, &env); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrBadPacket, err)
	}
	if env.Type == "" {
		return "", nil, fmt.Errorf("%w: no type", ErrBadPacket)
	}
	return env.Type, env.Data, nil
}

// Unmarshal implements Codec.
func (JSON) Unmarshal(body []byte, v any) error {
	if len(body) == 0 {
		return errors.New("empty body")
	}
	if unmarshalFlat(body, v) {
		return nil
	}
	return json.Unmarshal(body, v)
}

// Encode implements Codec.
func (JSON) Encode(p Packet) ([]byte, error) { return json.Marshal(p) }

// Binary implements Codec.
func (JSON) Binary() bool { return false }
