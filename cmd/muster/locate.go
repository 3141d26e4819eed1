package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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
	pos, err := parse(fs, args, 2, "KIND and ID (e.g. player alice, lobby ABCD)")
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
