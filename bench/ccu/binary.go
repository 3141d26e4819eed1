//go:build unix

package main

import (
	"encoding/binary"
	"errors"

	"github.com/muster-gg/muster/internal/wsframe"
	"github.com/muster-gg/muster/room"
)

// binaryCodec is the game's binary codec (-codec binary), through the
// room.Codec a game plugs in: an input is 9 bytes ([1][x u32][y u32],
// little-endian) and a state is [2][tick u64][n u8] then n positions
// ([x u32][y u32]); every other message, the hello and the queue
// included, stays JSON. Frames go out as binary WebSocket messages.
type binaryCodec struct{ room.JSON }

const (
	binInput = 1
	binState = 2
)

func (c binaryCodec) Decode(frame []byte) (string, []byte, error) {
	if len(frame) == 9 && frame[0] == binInput {
		return "input", frame[1:], nil
	}
	return c.JSON.Decode(frame)
}

func (c binaryCodec) Unmarshal(body []byte, v any) error {
	if in, ok := v.(*input); ok && len(body) == 8 {
		in.X, in.Y = binary.LittleEndian.Uint32(body), binary.LittleEndian.Uint32(body[4:])
		return nil
	}
	return c.JSON.Unmarshal(body, v)
}

func (c binaryCodec) Encode(p room.Packet) ([]byte, error) {
	s, ok := p.(state)
	if !ok {
		return c.JSON.Encode(p)
	}
	if len(s.Players) > 255 {
		return nil, errors.New("state: more than 255 players")
	}
	b := make([]byte, 0, 10+8*len(s.Players))
	b = append(b, binState)
	b = binary.LittleEndian.AppendUint64(b, s.Tick)
	b = append(b, byte(len(s.Players)))
	for _, f := range s.Players {
		b = binary.LittleEndian.AppendUint32(b, f.X)
		b = binary.LittleEndian.AppendUint32(b, f.Y)
	}
	return b, nil
}

func (binaryCodec) Binary() bool { return true }

// musterBinProto is Muster's protocol with binaryCodec: joining as
// musterProto; inputs and states binary.
type musterBinProto struct{ musterProto }

func (musterBinProto) input(b []byte, v uint32) []byte {
	b = append(b, binInput)
	b = binary.LittleEndian.AppendUint32(b, v)
	return binary.LittleEndian.AppendUint32(b, v)
}

func (musterBinProto) op() byte { return wsframe.OpBinary }

func (musterBinProto) isState(msg []byte) bool { return len(msg) >= 10 && msg[0] == binState }

func (musterBinProto) shows(msg []byte, v uint32, _ []byte) bool {
	for p := msg[10:]; len(p) >= 8; p = p[8:] {
		if binary.LittleEndian.Uint32(p) == v {
			return true
		}
	}
	return false
}
