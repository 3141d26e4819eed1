package relay

import (
	"context"
	"sync"

	"github.com/coder/websocket"
)

// track registers s unless the relay is closing.
func (rl *Relay) track(s *session) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.closing {
		return false
	}
	rl.sessions[s] = struct{}{}
	rl.wg.Add(1)
	return true
}

func (rl *Relay) untrack(s *session) {
	rl.mu.Lock()
	delete(rl.sessions, s)
	rl.mu.Unlock()
	rl.wg.Done()
}

// Close stops relaying new connections, closes every relayed connection
// with 1001 (going away), and waits until all of them and their goroutines
// have ended. Each node is told first, and its client once the node has
// answered, with the node's answer: what a node sent before it reads the
// close still reaches its client. A peer that does not answer the close
// handshake delays Close by at most the close handshake's time (5 s)
// before its connection is dropped. Requests that arrive afterwards
// are served locally. Close always returns nil; it is safe to call more than
// once and concurrently with Shutdown.
func (rl *Relay) Close() error {
	rl.mu.Lock()
	rl.closing = true
	open := make([]*session, 0, len(rl.sessions))
	for s := range rl.sessions {
		open = append(open, s)
	}
	rl.mu.Unlock()

	var wg sync.WaitGroup
	for _, s := range open {
		wg.Go(func() { s.stop(websocket.StatusGoingAway, "server closing") })
	}
	wg.Wait()
	rl.wg.Wait()
	rl.loops.wait()
	return nil
}

// Drain makes the relay refuse every new connection it would relay with
// 503 Service Unavailable, and returns nil at once. A draining server calls
// it (a Relay is a fleet.Drainer): it will leave, and a connection it
// relayed would be cut when it does, while a load balancer that retries a
// 503 on another server (nginx's proxy_next_upstream http_503) has that
// server relay it, or serve it when it is the target. Connections relayed
// already carry on until Shutdown or Close. Requests that are not for
// another node are served as before.
func (rl *Relay) Drain(context.Context) error {
	rl.draining.Store(true)
	return nil
}

// Shutdown stops relaying new connections and waits for the relayed ones to
// end by themselves. When ctx is done first it closes them as Close does and
// returns ctx's error. It is safe to call more than once.
func (rl *Relay) Shutdown(ctx context.Context) error {
	rl.mu.Lock()
	rl.closing = true
	rl.mu.Unlock()

	done := make(chan struct{})
	go func() { // ends when the last session does, at the latest in Close below
		rl.wg.Wait()
		rl.loops.wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		_ = rl.Close()
		<-done
		return ctx.Err()
	}
}
