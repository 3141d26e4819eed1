//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/muster-gg/muster/internal/wsframe"
)

// musterProto is Muster's protocol (docs/protocol.md): a guest ticket,
// /play, hello, queue for the "duel" playlist; inputs and states in JSON.
type musterProto struct{}

func (musterProto) join(hc *http.Client, addr string, i int) (*wsConn, error) {
	resp, err := hc.Post("http://"+addr+"/ticket", "application/json", bytes.NewReader(fmt.Appendf(nil, `{"player":"p%d"}`, i)))
	if err != nil {
		return nil, err
	}
	var t struct{ Ticket string }
	err = json.NewDecoder(resp.Body).Decode(&t)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("ticket: %w", err)
	}
	ws, err := dialWS(addr, "/play?ticket="+url.QueryEscape(t.Ticket), 10*time.Second)
	if err != nil {
		return nil, err
	}
	if err := ws.write(wsframe.OpText, []byte(`{"type":"hello","data":{"mode":"new"}}`)); err != nil {
		ws.close()
		return nil, err
	}
	if err := ws.write(wsframe.OpText, []byte(`{"type":"queue","data":{"playlist":"duel"}}`)); err != nil {
		ws.close()
		return nil, err
	}
	return ws, nil
}

func (musterProto) input(b []byte, v uint32) []byte {
	b = append(b, `{"type":"input","data":{"x":`...)
	b = strconv.AppendUint(b, uint64(v), 10)
	b = append(b, `,"y":`...)
	b = strconv.AppendUint(b, uint64(v), 10)
	return append(b, `}}`...)
}

func (musterProto) op() byte { return wsframe.OpText }

func (musterProto) isState(msg []byte) bool { return bytes.HasPrefix(msg, []byte(`{"type":"state"`)) }

func (musterProto) shows(msg []byte, v uint32, scratch []byte) bool {
	scratch = append(scratch[:0], `"x":`...)
	scratch = strconv.AppendUint(scratch, uint64(v), 10)
	for rest := msg; ; {
		k := bytes.Index(rest, scratch)
		if k < 0 {
			return false
		}
		rest = rest[k+len(scratch):]
		if len(rest) == 0 || rest[0] < '0' || rest[0] > '9' {
			return true
		}
	}
}

// colyseusProto is Colyseus 0.18's protocol: a seat from
// POST /matchmake/joinOrCreate/duel, the WebSocket to the room, its
// JOIN_ROOM answered; inputs are ROOM_DATA messages "input" with a
// msgpack body, states are schema patches, in which a player's position
// is its uint32, little-endian.
type colyseusProto struct{}

const (
	cJoinRoom   = 10
	cRoomData   = 13
	cRoomState  = 14
	cStatePatch = 15
)

func (colyseusProto) join(hc *http.Client, addr string, i int) (*wsConn, error) {
	resp, err := hc.Post("http://"+addr+"/matchmake/joinOrCreate/duel", "application/json", bytes.NewReader([]byte(`{}`)))
	if err != nil {
		return nil, err
	}
	var seat struct{ SessionID, RoomID, ProcessID string }
	err = json.NewDecoder(resp.Body).Decode(&seat)
	resp.Body.Close()
	if err != nil || seat.RoomID == "" {
		return nil, fmt.Errorf("matchmake: %s %v", resp.Status, err)
	}
	ws, err := dialWS(addr, "/"+seat.ProcessID+"/"+seat.RoomID+"?sessionId="+url.QueryEscape(seat.SessionID), 10*time.Second)
	if err != nil {
		return nil, err
	}
	_, msg, err := ws.read()
	if err == nil && (len(msg) == 0 || msg[0] != cJoinRoom) {
		err = fmt.Errorf("join: first message %v", msg[:min(len(msg), 8)])
	}
	if err == nil {
		err = ws.write(wsframe.OpBinary, []byte{cJoinRoom})
	}
	if err != nil {
		ws.close()
		return nil, err
	}
	return ws, nil
}

func (colyseusProto) input(b []byte, v uint32) []byte {
	b = append(b, cRoomData, 0xa0|5)
	b = append(b, "input"...)
	b = append(b, 0x82, 0xa1, 'x', 0xce, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	return append(b, 0xa1, 'y', 0xce, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func (colyseusProto) op() byte { return wsframe.OpBinary }

func (colyseusProto) isState(msg []byte) bool {
	return len(msg) > 0 && (msg[0]&0x1F == cStatePatch || msg[0]&0x1F == cRoomState)
}

func (colyseusProto) shows(msg []byte, v uint32, _ []byte) bool {
	return bytes.Contains(msg[1:], []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
}
