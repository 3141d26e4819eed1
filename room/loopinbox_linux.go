//go:build linux

package room

import "syscall"

// The messages of a client on the event loop that its session goroutine
// handles (all but the inputs it may handle on the loop): queued in
// order, bounded by maxInbox bytes, past which the loop stops reading the
// client until the session goroutine takes them.

// queuedMessage is a message the session goroutine handles.
type queuedMessage struct {
	typ  string
	body []byte
}

// queue gives a message to the session goroutine, behind the ones it has;
// past maxInbox bytes waiting, the loop's reads of lc pause.
func (lc *loopConn) queue(typ string, body []byte) {
	lc.wmu.Lock()
	lc.inbox = append(lc.inbox, queuedMessage{typ, body})
	lc.inboxBytes += len(body)
	if lc.inboxBytes > lc.maxInbox {
		lc.paused = true
	}
	if !lc.working {
		lc.working = true
		select {
		case lc.kick <- struct{}{}:
		default:
		}
	}
	lc.wmu.Unlock()
}

// isPaused reports whether the loop's reads of lc wait for the session
// goroutine.
func (lc *loopConn) isPaused() bool {
	lc.wmu.Lock()
	defer lc.wmu.Unlock()
	return lc.paused
}

// takeLocked empties the inbox and returns what it held; it reports
// whether the loop's reads had paused, which the caller resumes once wmu
// is unlocked.
func (lc *loopConn) takeLocked() (batch []queuedMessage, paused bool) {
	batch, paused = lc.inbox, lc.paused
	lc.inbox, lc.inboxBytes, lc.paused = nil, 0, false
	return batch, paused
}

// resume re-arms lc's socket on the loop's epoll after its reads paused:
// what waits in it makes an event at once (edge-triggered epoll signals
// only arrivals otherwise).
func (lc *loopConn) resume() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.closed {
		return // the descriptor may be another connection's by now
	}
	ev := syscall.EpollEvent{Events: loopEvents, Fd: int32(lc.fd)}
	_ = syscall.EpollCtl(lc.l.epfd, syscall.EPOLL_CTL_MOD, lc.fd, &ev)
}

// inline reports whether a message may be handled on the loop: the
// session goroutine has none queued before it.
func (lc *loopConn) inline() bool {
	lc.wmu.Lock()
	defer lc.wmu.Unlock()
	return !lc.working
}

// work runs on the session goroutine: it handles the messages queued,
// with handle, until the connection ends and every message read before
// its end is handled, as the portable path's reader does (a "leave" then
// the close). handle returns false when it closed the client: what
// follows is dropped.
func (lc *loopConn) work(handle func(typ string, body []byte) bool) {
	for {
		lc.wmu.Lock()
		batch, paused := lc.takeLocked()
		if len(batch) == 0 {
			lc.working = false
		}
		lc.wmu.Unlock()
		if paused {
			lc.resume()
		}
		for i, m := range batch {
			if !handle(m.typ, m.body) {
				clear(batch[i:])
				lc.wmu.Lock()
				_, paused := lc.takeLocked()
				lc.working = true // nothing more is handled
				lc.wmu.Unlock()
				if paused {
					lc.resume() // the loop reads on to the end
				}
				<-lc.ended
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-lc.kick:
		case <-lc.ended:
			// The loop queues nothing after the end: one more look
			// handles what came before it.
			lc.wmu.Lock()
			last, _ := lc.takeLocked()
			lc.working = true
			lc.wmu.Unlock()
			for _, m := range last {
				if !handle(m.typ, m.body) {
					break
				}
			}
			return
		}
	}
}
