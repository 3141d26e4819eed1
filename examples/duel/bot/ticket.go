package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// This file is the game's two addresses as the bot uses them: the ticket
// endpoint, <URL>/ticket, and the WebSocket's, <URL>/play.

// ticket asks for a connection ticket for the bot's player.
func (b *Bot) ticket(ctx context.Context) (string, error) {
	b.mu.Lock()
	player := b.rep.Player
	b.rep.Tickets++
	b.mu.Unlock()
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
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("ticket: %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	var t struct {
		Ticket string `json:"ticket"`
		Player string `json:"player"`
	}
	if err := json.Unmarshal(data, &t); err != nil || t.Ticket == "" {
		return "", fmt.Errorf("ticket: undecodable answer %.80q", data)
	}
	if player == "" {
		b.mu.Lock()
		b.rep.Player = t.Player
		b.mu.Unlock()
	}
	return t.Ticket, nil
}

// playURL is the WebSocket address to connect to with ticket: the
// redirect's query when l has one, and the server l asks for.
func (b *Bot) playURL(ticket string, l link) string {
	u := *b.base.JoinPath("play")
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	q := url.Values{}
	if l.query != "" {
		q, _ = url.ParseQuery(l.query) // the redirect's: it names the server and may carry more
	}
	q.Set("ticket", ticket)
	if l.hint != "" && !q.Has(l.param) {
		q.Set(l.param, l.hint)
	}
	u.RawQuery = q.Encode()
	return u.String()
}
