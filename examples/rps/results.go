package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"

	"github.com/muster-gg/muster/room"
)

// Result is one match's result, as saved.
type Result struct {
	Room    string         `json:"room"`
	Kind    string         `json:"kind"` // the playlist, or "lobby"
	Players []string       `json:"players"`
	Score   map[string]int `json:"score"`
	Winner  string         `json:"winner,omitempty"`
	Reason  string         `json:"reason"`
	Rounds  []Round        `json:"rounds"`
}

// Results saves match results: a room module whose Run appends them to a
// file (one JSON line each, with O_APPEND, so servers may share it) and
// logs them. RoomEnded must not block, so Save only queues; a result
// saved once Run has returned (a room stopped with the server) is written
// at once. Safe for concurrent use.
type Results struct {
	path   string
	logger *slog.Logger

	mu      sync.Mutex
	queue   []Result
	stopped bool
	kick    chan struct{}
}

// NewResults returns Results appending to the file at path ("" for none).
func NewResults(path string) *Results {
	return &Results{path: path, logger: slog.Default(), kick: make(chan struct{}, 1)}
}

// Attach implements room.Module.
func (s *Results) Attach(h room.ModuleHost) error {
	s.logger = h.Logger().With("component", "rps-results")
	return nil
}

// Save queues res to be written.
func (s *Results) Save(res Result) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		s.write([]Result{res})
		return
	}
	s.queue = append(s.queue, res)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run implements room.Runner: it writes what Save queued until ctx ends.
func (s *Results) Run(ctx context.Context) error {
	for {
		select {
		case <-s.kick:
		case <-ctx.Done():
		}
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.stopped = ctx.Err() != nil
		s.mu.Unlock()
		s.write(batch)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// write logs and appends batch.
func (s *Results) write(batch []Result) {
	if len(batch) == 0 {
		return
	}
	var lines []byte
	for _, res := range batch {
		s.logger.Info("match ended", "room_id", res.Room, "winner", res.Winner, "reason", res.Reason, "score", res.Score)
		b, _ := json.Marshal(res) // plain data: cannot fail
		lines = append(append(lines, b...), '\n')
	}
	if s.path == "" {
		return
	}
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.logger.Error("save results", "err", err)
		return
	}
	if _, err := f.Write(lines); err != nil {
		s.logger.Error("save results", "err", err)
	}
	if err := f.Close(); err != nil {
		s.logger.Error("save results", "err", err)
	}
}
