package room

import "time"

// missedEnd is the end of a room that one of its players did not hear of:
// the player was away (not connected here) when the room ended. The
// player is told when it comes back here within the away timeout.
type missedEnd struct {
	packet roomOutPacket
	at     time.Time
}

// missLocked records that player id was away when its room ended with
// packet. Entries older than the away timeout are dropped now and then:
// whenever the map has doubled since the last sweep. h.mu must be held.
func (h *Host[Sim, Input, Player]) missLocked(id string, packet roomOutPacket, now time.Time) {
	if h.missed == nil {
		h.missed = make(map[string]missedEnd)
	}
	h.missed[id] = missedEnd{packet: packet, at: now}
	if len(h.missed) < h.missedSweep {
		return
	}
	for p, m := range h.missed {
		if now.Sub(m.at) > h.cfg.AwayTimeout {
			delete(h.missed, p)
		}
	}
	h.missedSweep = max(64, 2*len(h.missed))
}

// takeMissedLocked returns and forgets the end that player id missed, if
// it is younger than the away timeout. h.mu must be held.
func (h *Host[Sim, Input, Player]) takeMissedLocked(id string, now time.Time) (roomOutPacket, bool) {
	m, ok := h.missed[id]
	if !ok {
		return roomOutPacket{}, false
	}
	delete(h.missed, id)
	return m.packet, now.Sub(m.at) <= h.cfg.AwayTimeout
}
