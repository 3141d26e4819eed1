package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/fleet"
)

// nodes prints the live servers of the fleet. A server signed with
// another security key than most of the others shows as foreign-key (see
// markForeign).
func nodes(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlags("nodes", &o)
	fleetFlags(fs, &o, true)
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	if err := where(fs, &o, true); err != nil {
		return err
	}
	var list []fleet.Node
	var err error
	if o.server != "" {
		list, err = serverNodes(ctx, &o)
	} else {
		list, err = registryNodes(ctx, &o, stderr)
	}
	if err != nil {
		return err
	}
	printNotes(stderr, markForeign(list))
	if o.json {
		return writeJSON(stdout, list)
	}
	// A server does not publish the others' internal addresses (its
	// dashboard is public): through one, the table shows where clients
	// reach each server instead.
	return nodeTable(stdout, list, o.server == "")
}

// registryNodes reads the live servers from the fleet's Redis.
func registryNodes(ctx context.Context, o *options, stderr io.Writer) ([]fleet.Node, error) {
	bp, err := openRedis(o)
	if err != nil {
		return nil, err
	}
	defer bp.Close()
	return listNodes(ctx, bp, o, stderr)
}

// listNodes reads the live servers from the registry, one round trip. A
// record that does not decode is reported and skipped.
func listNodes(ctx context.Context, bp backplane.Backplane, o *options, stderr io.Writer) ([]fleet.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	recs, err := bp.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	list := make([]fleet.Node, 0, len(recs))
	for _, r := range recs {
		var n fleet.Node
		if err := json.Unmarshal(r.Data, &n); err != nil || n.ID != r.ID {
			fmt.Fprintf(stderr, "muster: skipped the record of %s: it is not a fleet node record\n", cell(r.ID))
			continue
		}
		list = append(list, n)
	}
	slices.SortFunc(list, func(a, b fleet.Node) int { return cmp.Compare(a.ID, b.ID) })
	return list, nil
}

// nodeTable prints one line per server, ending with its internal address,
// or with its public address when internal is false.
func nodeTable(w io.Writer, list []fleet.Node, internal bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	last := "INTERNAL"
	if !internal {
		last = "PUBLIC"
	}
	fmt.Fprintln(tw, "ID\tREGION\tSTATE\tLOAD\tROOMS\tPLAYERS\tQUEUES\t"+last)
	step := 0 // a load published in steps, for the note
	for _, n := range list {
		addr := n.InternalAddress
		if !internal {
			addr = n.PublicAddress
		}
		load := fmt.Sprintf("%d/%d", n.Load, n.MaxLoad)
		if n.LoadStep > 0 {
			load, step = "~"+load, n.LoadStep
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			cell(n.ID), cell(n.Region), cell(string(n.State)), load,
			optStat(n, "rooms"), optStat(n, "players"), queues(n), cell(addr))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if step > 0 {
		_, err := fmt.Fprintf(w, "\n~ the load as published, in steps of %d (muster.server.capacity.load-step, MUSTER__SERVER__CAPACITY__LOAD_STEP): the exact load is less than a step from it, on the server's %s\n",
			step, fleet.PathCapacity)
		return err
	}
	return nil
}

// optStat returns a statistic a server may not publish, or "-".
func optStat(n fleet.Node, name string) string {
	v, ok := n.Stats[name]
	if !ok {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

// queues returns "duel=3,squad=0" from the "queue:<playlist>" statistics.
func queues(n fleet.Node) string {
	var qs []string
	for name, v := range n.Stats {
		if pl, ok := strings.CutPrefix(name, "queue:"); ok {
			qs = append(qs, cell(pl)+"="+strconv.FormatInt(v, 10))
		}
	}
	if len(qs) == 0 {
		return "-"
	}
	slices.Sort(qs)
	return strings.Join(qs, ",")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
