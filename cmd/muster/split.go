package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/muster-gg/muster/fleet"
)

// stateForeign is the state `muster nodes` shows for a server signed with
// another security key than most of its cluster: the servers that hold
// the key drop its record, and it theirs.
const stateForeign fleet.State = "foreign-key"

// markForeign shows as foreign-key the servers of list that more than half
// of the others drop, by the foreign lists their records publish; one
// against one, both are marked. It returns a note for stderr per server
// that drops others, none for a whole fleet. The CLI holds no key: it
// goes by what the servers say.
func markForeign(list []fleet.Node) []string {
	droppedBy := map[string]int{}
	var notes []string
	for _, n := range list {
		for _, id := range n.Foreign {
			droppedBy[id]++
		}
		if len(n.Foreign) > 0 {
			ids := make([]string, len(n.Foreign))
			for i, id := range n.Foreign {
				ids[i] = cell(id)
			}
			notes = append(notes, fmt.Sprintf("%s drops the records of %s: signed with another muster.security.key (MUSTER__SECURITY__KEY)",
				cell(n.ID), strings.Join(ids, ", ")))
		}
	}
	for i, n := range list {
		if others := len(list) - 1; others > 0 && 2*droppedBy[n.ID] > others {
			list[i].State = stateForeign
		}
	}
	return notes
}

// withForeign adds to list, the servers server self sees, a foreign-key
// row for each server it drops for its key (it knows no more of them),
// and notes them in its own row for markForeign.
func withForeign(list []fleet.Node, self string, foreign []string) []fleet.Node {
	for i := range list {
		if list[i].ID == self {
			list[i].Foreign = foreign
		}
	}
	for _, id := range foreign {
		if !slices.ContainsFunc(list, func(n fleet.Node) bool { return n.ID == id }) {
			list = append(list, fleet.Node{ID: id, State: stateForeign})
		}
	}
	return list
}

// probeState returns the word a server's readiness probe answers 503
// with ("detached", "foreign-key", "draining", …), or "" when it answers
// 200 or cannot be asked: through one server, its own row shows what its
// probe says, which its record (ready) does not.
func probeState(ctx context.Context, o *options, base string) fleet.State {
	req, err := http.NewRequest(http.MethodGet, base+fleet.PathReady, nil)
	if err != nil {
		return ""
	}
	_, err = do(ctx, o, req, http.StatusOK)
	var status statusError
	if !errors.As(err, &status) || status.code != http.StatusServiceUnavailable {
		return ""
	}
	word, _, _ := strings.Cut(status.body, ":")
	if word = strings.TrimSpace(word); word == "" || strings.ContainsAny(word, " \t") {
		return ""
	}
	return fleet.State(word)
}

// showProbe sets the state of server self in list to what its readiness
// probe says, when it says 503.
func showProbe(ctx context.Context, o *options, base, self string, list []fleet.Node) {
	s := probeState(ctx, o, base)
	if s == "" {
		return
	}
	for i := range list {
		if list[i].ID == self {
			list[i].State = s
		}
	}
}

// printNotes writes each note to w as a muster: line.
func printNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(w, "muster: "+n)
	}
}
