package matchmaking

import (
	"cmp"
	"slices"
	"time"
)

// state is where a queue entry is in its life.
type state uint8

const (
	waiting state = iota // in the queue
	pending              // matched; its room is being opened
	moving               // being handed to another server
)

// entry is one waiting player.
type entry struct {
	id      string
	q       *queue
	rating  float64
	since   int64     // when it began to wait (Unix ns), back-dated by time waited elsewhere
	arrived time.Time // when it connected to this server (the move cooldown)
	hold    time.Time // gathering does not move it before (it arrived with a handoff)
	from    string    // the server it was handed from, if any
	back    time.Time // not sent back to from before, unless...
	never   bool      // ...from was draining: never sent back there
	state   state
	told    bool // told that this server drains with nowhere to go
	pos     int  // index in q.waiting while waiting
	mark    bool // matcher scratch: taken in this round
}

func (e *entry) waited(now time.Time) time.Duration { return time.Duration(now.UnixNano() - e.since) }

// handoff is what moves with e to another server: its place, with the
// time waited until now. from is this server; drain says it drains.
func (e *entry) handoff(now time.Time, from string, drain bool) handoff {
	return handoff{Playlist: e.q.pl.Name, Waited: int64(e.waited(now)), Rating: e.rating, From: from, Drain: drain}
}

// queue is one playlist's queue on this server. It is guarded by the
// module's mutex.
type queue struct {
	pl       Playlist
	stat     string // "queue:<name>"
	waiting  []*entry
	received time.Time // until then this server gathers pl: it was sent players

	// matcher scratch, kept to spare allocations
	byWait, byRating []*entry
	prev, next       []int32
}

func newQueue(pl Playlist) *queue { return &queue{pl: pl, stat: "queue:" + pl.Name} }

func (q *queue) add(e *entry) {
	e.q, e.state, e.pos = q, waiting, len(q.waiting)
	q.waiting = append(q.waiting, e)
}

// remove takes a waiting entry out of the queue.
func (q *queue) remove(e *entry) {
	last := len(q.waiting) - 1
	q.waiting[e.pos] = q.waiting[last]
	q.waiting[e.pos].pos = e.pos
	q.waiting[last] = nil
	q.waiting = q.waiting[:last]
}

// match forms every match it can at now, longest-waiting players first,
// with at most seats players in all, takes their players out of the
// queue (marked pending) and appends each match, split into teams, to
// out. The players left over keep their place, unmarked.
func (q *queue) match(now time.Time, out []match, seats int) []match {
	need := q.pl.size()
	if len(q.waiting) < need || seats < need {
		return out
	}
	q.byWait = append(q.byWait[:0], q.waiting...)
	slices.SortFunc(q.byWait, byWaitOrder)
	before := len(out)
	if q.pl.Rating.enabled() {
		out = q.matchRated(now, need, seats/need, out)
	} else {
		for i := 0; i+need <= len(q.byWait) && i+need <= seats; i += need {
			out = append(out, q.teams(q.byWait[i:i+need]))
		}
	}
	if len(out) == before {
		return out
	}
	kept := q.waiting[:0]
	for _, e := range q.waiting {
		if e.mark {
			e.mark, e.state = false, pending
			continue
		}
		e.pos = len(kept)
		kept = append(kept, e)
	}
	clear(q.waiting[len(kept):])
	q.waiting = kept
	clear(q.byWait)
	return out
}

func byWaitOrder(a, b *entry) int {
	if c := cmp.Compare(a.since, b.since); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// matchRated walks the players longest-waiting first; around each it
// takes the nearest ratings still free, on either side, while they lie
// within its window. The free players are a linked list in rating order,
// so a round costs one sort and a walk. It forms at most limit matches.
func (q *queue) matchRated(now time.Time, need, limit int, out []match) []match {
	rule := q.pl.Rating
	q.byRating = append(q.byRating[:0], q.waiting...)
	slices.SortFunc(q.byRating, func(a, b *entry) int {
		if c := cmp.Compare(a.rating, b.rating); c != 0 {
			return c
		}
		return byWaitOrder(a, b)
	})
	n := len(q.byRating)
	q.prev, q.next = slices.Grow(q.prev[:0], n)[:n], slices.Grow(q.next[:0], n)[:n]
	for i, e := range q.byRating {
		e.pos = i // rating index for this round; restored below
		q.prev[i], q.next[i] = int32(i-1), int32(i+1)
	}
	q.next[n-1] = -1
	unlink := func(i int32) {
		p, nx := q.prev[i], q.next[i]
		if p >= 0 {
			q.next[p] = nx
		}
		if nx >= 0 {
			q.prev[nx] = p
		}
	}
	group := make([]*entry, 0, need)
	free := n
	for _, anchor := range q.byWait {
		if free < need || limit == 0 {
			break
		}
		if anchor.mark {
			continue
		}
		w := rule.window(anchor.waited(now))
		group = append(group[:0], anchor)
		l, r := q.prev[anchor.pos], q.next[anchor.pos]
		for len(group) < need {
			dl, dr := -1.0, -1.0
			if l >= 0 {
				dl = anchor.rating - q.byRating[l].rating
			}
			if r >= 0 {
				dr = q.byRating[r].rating - anchor.rating
			}
			if dl >= 0 && dl <= w && (dr < 0 || dl <= dr) {
				group = append(group, q.byRating[l])
				l = q.prev[l]
			} else if dr >= 0 && dr <= w {
				group = append(group, q.byRating[r])
				r = q.next[r]
			} else {
				break
			}
		}
		if len(group) < need {
			continue
		}
		for _, e := range group {
			e.mark = true
			unlink(int32(e.pos))
		}
		free -= need
		limit--
		out = append(out, q.teams(group))
	}
	for i, e := range q.waiting {
		e.pos = i
	}
	clear(q.byRating)
	return out
}

// match is one formed match: its players, team by team.
type match struct {
	q       *queue
	teams   [][]string
	players []*entry
}

// teams marks the players of group as taken and splits them into teams:
// by rating, strongest first, in snake order (A B B A ...), so that the
// teams' ratings are close; without ratings, in the order they waited.
func (q *queue) teams(group []*entry) match {
	players := slices.Clone(group)
	if q.pl.Rating.enabled() {
		slices.SortStableFunc(players, func(a, b *entry) int { return cmp.Compare(b.rating, a.rating) })
	}
	nt := q.pl.Teams
	ids := make([]string, len(players))
	teams := make([][]string, nt)
	for t := range teams {
		teams[t] = ids[t*q.pl.TeamSize : t*q.pl.TeamSize : (t+1)*q.pl.TeamSize]
	}
	for i, e := range players {
		e.mark = true
		round, k := i/nt, i%nt
		if round%2 == 1 {
			k = nt - 1 - k
		}
		teams[k] = append(teams[k], e.id)
	}
	return match{q: q, teams: teams, players: players}
}
