package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// throws are what the bot throws, at random.
var throws = []string{"rock", "paper", "scissors"}

// Run plays until ctx ends: it connects, and connects again after every
// redirect and drop (not while Drop holds it away).
func (b *Bot) Run(ctx context.Context) error {
	mode, query := "new", ""
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		b.mu.Lock()
		away := b.away
		b.mu.Unlock()
		if away {
			select {
			case <-b.back:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		redirect, err := b.connection(ctx, mode, query)
		mode, query = "rejoin", redirect
		if err == nil {
			backoff = 50 * time.Millisecond
			continue
		}
		if ctx.Err() == nil {
			b.cfg.Logger.Debug("bot connection", "player_id", b.Report().Player, "err", err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, time.Second)
	}
	return nil
}

// connection connects once and plays until the connection ends; it
// returns the query of the redirect that ended it, if one did.
func (b *Bot) connection(ctx context.Context, mode, query string) (redirect string, err error) {
	if query == "" {
		tk, err := b.ticket(ctx)
		if err != nil {
			return "", err
		}
		query = "ticket=" + tk
	}
	u := *b.base.JoinPath("play")
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.RawQuery = query
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(dctx, u.String(), &websocket.DialOptions{HTTPClient: b.cfg.HTTPClient})
	if err != nil {
		return "", err
	}
	defer ws.CloseNow()
	if err := write(dctx, ws, message{Type: "hello", Data: map[string]string{"mode": mode}}); err != nil {
		return "", err
	}
	frames := make(chan []byte, 16)
	rctx, rcancel := context.WithCancel(ctx)
	var readErr error
	go func() {
		defer close(frames)
		for {
			_, data, err := ws.Read(rctx)
			if err != nil {
				readErr = err
				return
			}
			select {
			case frames <- data:
			case <-rctx.Done():
				readErr = rctx.Err()
				return
			}
		}
	}()
	defer func() {
		rcancel()
		ws.CloseNow()
		for range frames { // the reader has ended
		}
	}()
	welcomed := false
	for {
		select {
		case <-ctx.Done():
			ws.Close(websocket.StatusNormalClosure, "bot stopped")
			return "", nil
		case <-b.drop:
			b.mu.Lock()
			away := b.away
			b.mu.Unlock()
			if away {
				return "", nil // CloseNow: gone without a word
			}
		case <-b.kick:
		case data, ok := <-frames:
			if !ok {
				if redirect != "" {
					return redirect, nil
				}
				return "", fmt.Errorf("connection ended: %w", readErr)
			}
			var p packet
			if err := json.Unmarshal(data, &p); err != nil {
				return "", fmt.Errorf("undecodable packet %.80q", data)
			}
			if p.Type == "welcome" {
				welcomed = true
			}
			if q := b.packet(p, data); q != "" {
				redirect = q
			}
		}
		if welcomed {
			if err := b.send(ctx, ws); err != nil {
				return redirect, err
			}
		}
	}
}

// packet is the part of every server packet the bot reads first.
type packet struct {
	Type   string `json:"type"`
	Room   string `json:"room"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Query  string `json:"query"`
	Error  string `json:"error"`
}

// packet records p (whose frame is data) and returns the query of a
// redirect.
func (b *Bot) packet(p packet, data []byte) (redirect string) {
	switch p.Type {
	case "welcome":
		var w Welcome
		json.Unmarshal(data, &w)
		b.update(func(r *Report) { r.Welcomes = append(r.Welcomes, w) })
	case "redirect":
		return p.Query
	case "room":
		b.update(func(r *Report) {
			r.Rooms = append(r.Rooms, Room{ID: p.Room, Kind: p.Kind})
			r.State, r.thrownRound = State{}, 0
		})
	case "room_end":
		b.update(func(r *Report) {
			for i := range r.Rooms {
				if r.Rooms[i].ID == p.Room {
					r.Rooms[i].Ended, r.Rooms[i].End = true, p.Reason
				}
			}
		})
	case "lobby.error", "queue.error":
		b.update(func(r *Report) { r.Errors = append(r.Errors, p.Type+": "+p.Error) })
	case "lobby.state":
		var l Lobby
		json.Unmarshal(data, &l)
		b.update(func(r *Report) { r.Lobby = l })
	case "rps":
		var s State
		json.Unmarshal(data, &s)
		b.update(func(r *Report) { r.State = s })
	}
	return ""
}

// send sends the pending commands, and a throw when the round wants one.
func (b *Bot) send(ctx context.Context, ws *websocket.Conn) error {
	b.mu.Lock()
	out := b.pending
	b.pending = nil
	s := b.rep.State
	me, seated := s.Me(b.rep.Player)
	if seated && !b.hold && !s.Over && s.Round > 0 && !me.Thrown && b.rep.thrownRound != s.Round {
		b.rep.thrownRound = s.Round
		b.rep.Throws++
		out = append(out, message{Type: "input", Data: map[string]any{"round": s.Round, "throw": throws[rand.IntN(len(throws))]}})
	}
	b.mu.Unlock()
	for _, m := range out {
		if err := write(ctx, ws, m); err != nil {
			return err
		}
	}
	return nil
}

func write(ctx context.Context, ws *websocket.Conn, m message) error {
	data, _ := json.Marshal(m)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return ws.Write(wctx, websocket.MessageText, data)
}

// ticket asks the game for a ticket for the bot's player, and keeps the
// id the server gives a bot without one.
func (b *Bot) ticket(ctx context.Context) (string, error) {
	player := b.Report().Player
	body, _ := json.Marshal(map[string]string{"player": player})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base.JoinPath("ticket").String(), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var t struct{ Ticket, Player string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &t) != nil || t.Ticket == "" {
		return "", fmt.Errorf("ticket: %s %.80q", resp.Status, data)
	}
	if player == "" {
		b.update(func(r *Report) { r.Player = t.Player })
	}
	return t.Ticket, nil
}
