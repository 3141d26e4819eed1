package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/fleet"
)

// located is what locate prints with --json.
type located struct {
	Kind string     `json:"kind"`
	ID   string     `json:"id"`
	Node fleet.Node `json:"node"`
}

// locate prints the live server that holds a unit.
func locate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlags("locate", &o)
	fleetFlags(fs, &o, false)
	pos, err := parse(fs, args, 2, "KIND and ID (KIND is "+kindList()+", e.g. player alice, lobby ABCD)")
	if err != nil {
		return err
	}
	if err := where(fs, &o, false); err != nil {
		return err
	}
	key := backplane.Key{Kind: pos[0], ID: pos[1]}
	if err := backplane.ValidateClaim("muster", key); err != nil {
		return fmt.Errorf("%w: locate: %v", errUsage, err)
	}

	bp, err := openRedis(&o)
	if err != nil {
		return err
	}
	defer bp.Close()
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	owner, err := bp.Locate(cctx, key)
	cancel()
	if errors.Is(err, backplane.ErrNotFound) {
		if !slices.Contains(kinds, key.Kind) {
			// A game may claim kinds of its own, so an unknown kind is
			// looked up all the same; not found, it is most likely a typo.
			return fmt.Errorf("locate: unknown kind %s: the fleet claims %s%s", cell(key.Kind), kindList(), nearKind(key.Kind))
		}
		return fmt.Errorf("%s: not found: no live server holds it", key)
	}
	if err != nil {
		return err
	}
	list, err := listNodes(ctx, bp, &o, stderr)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(list, func(m fleet.Node) bool { return m.ID == owner })
	if i < 0 {
		return fmt.Errorf("%s: not found: its holder %s is not a live server", key, owner)
	}
	n := list[i]
	if o.json {
		return writeJSON(stdout, located{Kind: key.Kind, ID: key.ID, Node: n})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tNODE\tREGION\tSTATE\tINTERNAL\tPUBLIC")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cell(key.String()), cell(n.ID), cell(n.Region), cell(string(n.State)),
		cell(n.InternalAddress), cell(n.PublicAddress))
	return tw.Flush()
}

// kinds are the kinds of unit the fleet's own modules claim.
var kinds = []string{fleet.KindPlayer, fleet.KindLobby}

// kindList returns "player or lobby".
func kindList() string {
	return strings.Join(kinds[:len(kinds)-1], ", ") + " or " + kinds[len(kinds)-1]
}

// nearKind returns " (did you mean player?)" for a kind that differs from
// a known one only in case or by a letter, or "".
func nearKind(kind string) string {
	for _, k := range kinds {
		if strings.EqualFold(kind, k) || oneEdit(strings.ToLower(kind), k) {
			return " (did you mean " + k + "?)"
		}
	}
	return ""
}

// oneEdit reports whether a and b differ by one inserted, deleted or
// replaced byte.
func oneEdit(a, b string) bool {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a)-len(b) > 1 {
		return false
	}
	i := 0
	for i < len(b) && a[i] == b[i] {
		i++
	}
	if len(a) == len(b) {
		return a[i+1:] == b[i+1:]
	}
	return a[i+1:] == b[i:]
}
