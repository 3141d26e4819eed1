package federation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
)

type pendingReport struct {
	report RoomReport
	seq    uint64
}

// ReportRoom sends home the whole state of a room; call it on every
// change (members or properties), and once with Closed set when the room
// ends. Home keeps the latest snapshot per room, so a lost report is
// corrected by the next one. A snapshot home has not acknowledged is kept
// and resent with the next announce, until home has it or a newer
// snapshot of the room replaces it; one refused by home (4xx) is dropped.
// ReportRoom returns nil once home has the snapshot (or a newer one), and
// ErrNotJoined before Run has joined, in which case the snapshot is sent
// after the join.
func (n *Node) ReportRoom(ctx context.Context, rep RoomReport) error {
	if err := rep.validate(); err != nil {
		return err
	}
	rep.Members = slices.Clone(rep.Members)
	rep.Properties = maps.Clone(rep.Properties)
	n.mu.Lock()
	p := pendingReport{report: rep, seq: n.seq.Add(1)}
	n.pending[rep.RoomID] = p
	cred := n.cred
	n.mu.Unlock()
	if cred == nil {
		return ErrNotJoined
	}
	return n.send(ctx, cred, p)
}

// send posts one snapshot and settles its pending entry.
func (n *Node) send(ctx context.Context, cred *serverCredential, p pendingReport) error {
	req := roomRequest{NodeID: cred.NodeID, RoomReport: p.report, Seq: p.seq}
	var res roomResponse
	err := n.postJSON(ctx, PathRooms, cred.ServerKey, req, &res)
	var he *HomeError
	// Home's answer settles the snapshot, even a refusal: resending the
	// same body cannot change it.
	// A report refused until the next announce waits for it.
	if err == nil || (errors.As(err, &he) && he.Status < 500 && he.Status != http.StatusTooManyRequests && !errors.Is(err, ErrNotAnnounced)) {
		n.mu.Lock()
		if cur, ok := n.pending[p.report.RoomID]; ok && cur.seq == p.seq {
			delete(n.pending, p.report.RoomID)
		}
		n.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("report room %q: %w", p.report.RoomID, err)
	}
	return nil
}

// flush resends pending snapshots, stopping at the first that fails.
func (n *Node) flush(ctx context.Context) error {
	cred := n.credential()
	n.mu.Lock()
	todo := slices.Collect(maps.Values(n.pending))
	n.mu.Unlock()
	slices.SortFunc(todo, func(a, b pendingReport) int { return cmp.Compare(a.seq, b.seq) })
	for _, p := range todo {
		err := n.send(ctx, cred, p)
		if fatal(err) {
			return err
		}
		var he *HomeError
		if err != nil && !errors.As(err, &he) {
			return nil // home unreachable: try again next time
		}
	}
	return nil
}
