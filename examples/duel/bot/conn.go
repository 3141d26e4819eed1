package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
)

// This file is the bot's side of the connection: the WebSocket handshake,
// hello and welcome, and the reading and writing of messages.

// conn is a welcomed connection.
type conn struct {
	ws      *websocket.Conn
	node    string // the server that welcomed it
	room    string // the room the welcome named
	frames  chan []byte
	readErr error // valid once frames is closed
	cancel  context.CancelFunc
}

// Welcome is the server's answer to hello.
type Welcome struct {
	Type   string `json:"type"`
	Node   string `json:"node"`
	Player string `json:"player"`
	Room   string `json:"room"`
}

// connect gets a ticket (the one a redirect gave, or a new one), dials,
// says hello and reads the welcome. A failed attempt is recorded in the
// report with the stage it failed at.
func (b *Bot) connect(ctx context.Context, l link) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
	defer cancel()
	ticket := l.ticket
	if ticket == "" {
		var err error
		if ticket, err = b.ticket(cctx); err != nil {
			return nil, b.failed(l, "ticket", err)
		}
	}
	ws, _, err := websocket.Dial(cctx, b.playURL(ticket, l), &websocket.DialOptions{HTTPClient: b.cfg.HTTPClient})
	if err != nil {
		return nil, b.failed(l, "dial", err)
	}
	ws.SetReadLimit(1 << 20)
	w, err := hello(cctx, ws, l)
	if err != nil {
		ws.CloseNow()
		return nil, b.failed(l, "hello", err)
	}
	c := startReading(ws, w)
	b.welcomed(c, w, l)
	return c, nil
}

// failed records a connection attempt that failed at stage, and returns
// err.
func (b *Bot) failed(l link, stage string, err error) error {
	b.mu.Lock()
	b.rep.Failures = append(b.rep.Failures, Failure{At: time.Now(), Stage: stage, Node: l.hint, Err: err.Error()})
	b.eventLocked("failure", l.hint, stage+": "+err.Error())
	b.notifyLocked()
	b.mu.Unlock()
	return err
}

// hello says hello in l's mode and reads the welcome. A close by the
// server instead of a welcome is a *CloseError.
func hello(ctx context.Context, ws *websocket.Conn, l link) (Welcome, error) {
	var w Welcome
	err := writeJSON(ctx, ws, message{Type: "hello", Data: map[string]string{"mode": l.mode}})
	if err == nil {
		w, err = ReadWelcome(ctx, ws)
	}
	if code, reason := closeOf(err); code != -1 {
		err = &CloseError{Node: l.hint, Code: code, Reason: reason}
	}
	return w, err
}

// startReading starts the goroutine that reads c's frames into c.frames
// until the connection ends or c.cancel is called; it closes c.frames
// then, with c.readErr set.
func startReading(ws *websocket.Conn, w Welcome) *conn {
	rctx, rcancel := context.WithCancel(context.Background())
	c := &conn{ws: ws, node: w.Node, room: w.Room, frames: make(chan []byte, 16), cancel: rcancel}
	go func() {
		defer close(c.frames)
		for {
			_, data, err := ws.Read(rctx)
			if err != nil {
				c.readErr = err
				return
			}
			select {
			case c.frames <- data:
			case <-rctx.Done():
				c.readErr = rctx.Err()
				return
			}
		}
	}()
	return c
}

// ReadWelcome reads the next message of ws, which must be the server's
// welcome to a hello.
func ReadWelcome(ctx context.Context, ws *websocket.Conn) (Welcome, error) {
	_, data, err := ws.Read(ctx)
	if err != nil {
		return Welcome{}, err
	}
	var w Welcome
	if err := json.Unmarshal(data, &w); err != nil || w.Type != "welcome" {
		return Welcome{}, fmt.Errorf("expected a welcome, got %.80q", data)
	}
	return w, nil
}

// closeOf returns the close code that ended a connection with err (-1 for
// none) and its reason: the close reason, or else err's text ("" for a
// nil err).
func closeOf(err error) (websocket.StatusCode, string) {
	code := websocket.CloseStatus(err)
	if ce := (websocket.CloseError{}); errors.As(err, &ce) {
		return code, ce.Reason
	} else if err != nil {
		return code, err.Error()
	}
	return code, ""
}

// write sends m on c, bounded by Config.WriteTimeout.
//
// Writes are bounded by a timeout of their own, never by Run's context: a
// write whose context ends closes the connection at once, and the bot must
// still be able to send its leave when it stops.
func (b *Bot) write(c *conn, m message) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.WriteTimeout)
	defer cancel()
	return writeJSON(ctx, c.ws, m)
}

func writeJSON(ctx context.Context, ws *websocket.Conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return ws.Write(ctx, websocket.MessageText, data)
}
