package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/fleet"
)

// pollEvery is how often drain --wait looks whether the server has left.
const pollEvery = 250 * time.Millisecond

// drained is what drain prints with --json.
type drained struct {
	Node  string `json:"node"`
	State string `json:"state"` // "draining", or "left" after --wait
}

// drain asks a server to drain: POST /muster/server/drain at its internal
// address from the registry, or at --server after checking that the server
// there is the one named.
func drain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlags("drain", &o)
	fleetFlags(fs, &o, true)
	fs.StringVar(&o.token, "token", os.Getenv("MUSTER_DRAIN_TOKEN"), "the servers' drain token, needed from a non-loopback address")
	fs.DurationVar(&o.wait, "wait", 0, "wait up to this long for the server to leave the fleet (0: do not wait)")
	pos, err := parse(fs, args, 1, "the NODE id")
	if err != nil {
		return err
	}
	if err := where(fs, &o, true); err != nil {
		return err
	}
	if o.wait < 0 {
		return fmt.Errorf("%w: drain: --wait must not be negative", errUsage)
	}
	id := pos[0]

	// Find the server's address, and what tells that it has left.
	var base string
	var gone func(context.Context) (bool, error)
	if o.server != "" {
		if base, err = serverURL(o.server); err != nil {
			return err
		}
		c, err := capacity(ctx, &o, base)
		if err != nil {
			return err
		}
		if c.NodeID != id {
			return fmt.Errorf("drain %s: the server at %s is %s (behind a load balancer? use its own address or --redis)", id, base, cell(c.NodeID))
		}
		gone = func(ctx context.Context) (bool, error) {
			c, err := capacity(ctx, &o, base)
			switch {
			case err == nil:
				return c.State == fleet.StateLeaving, nil
			case ctx.Err() == nil && errors.Is(err, syscall.ECONNREFUSED):
				return true, nil // the process has exited
			}
			// A poll that timed out, or the wait running out during it,
			// says nothing about the server: it may be busy draining.
			return false, err
		}
	} else {
		bp, err := openRedis(&o)
		if err != nil {
			return err
		}
		defer bp.Close()
		n, err := findNode(ctx, bp, &o, id, stderr)
		if err != nil {
			return err
		}
		if n.InternalAddress == "" {
			return fmt.Errorf("drain %s: the server publishes no internal address; use --server", id)
		}
		base = "http://" + n.InternalAddress
		gone = func(ctx context.Context) (bool, error) {
			_, err := findNode(ctx, bp, &o, id, io.Discard)
			if errors.Is(err, errNotLive) {
				return true, nil
			}
			return false, err
		}
	}

	req, err := http.NewRequest(http.MethodPost, base+fleet.PathDrain, nil)
	if err != nil {
		return err
	}
	if o.token != "" {
		req.Header.Set("Authorization", "Bearer "+o.token)
	}
	if _, err := do(ctx, &o, req, http.StatusAccepted); err != nil {
		var st statusError
		switch {
		case errors.As(err, &st) && st.code == http.StatusConflict:
			return fmt.Errorf("drain %s: the server has already left the fleet", id)
		case errors.As(err, &st) && st.code == http.StatusForbidden:
			return fmt.Errorf("drain %s: refused: drain from the server's own machine, or give the drain token (--token)", id)
		}
		return fmt.Errorf("drain %s: %w", id, err)
	}

	state := "draining"
	if o.wait > 0 {
		if err := waitGone(ctx, id, o.wait, gone); err != nil {
			return err
		}
		state = "left"
	}
	if o.json {
		return writeJSON(stdout, drained{Node: id, State: state})
	}
	fmt.Fprintf(stdout, "%s: %s\n", cell(id), state)
	return nil
}

// errNotLive reports a node id that is not in the registry.
var errNotLive = errors.New("not a live server")

// findNode returns the live server id from the registry.
func findNode(ctx context.Context, bp backplane.Backplane, o *options, id string, stderr io.Writer) (fleet.Node, error) {
	list, err := listNodes(ctx, bp, o, stderr)
	if err != nil {
		return fleet.Node{}, err
	}
	for _, n := range list {
		if n.ID == id {
			return n, nil
		}
	}
	return fleet.Node{}, fmt.Errorf("drain %s: %w of cluster %s", id, errNotLive, o.cluster)
}

// waitGone polls gone until it reports the server has left, for at most
// wait.
func waitGone(ctx context.Context, id string, wait time.Duration, gone func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	var last error
	for {
		ok, err := gone(ctx)
		if ok {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			last = err // not the wait running out during the poll
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("drain %s: still draining after %v", id, wait)
			if last != nil {
				msg += " (last error: " + strings.TrimSpace(last.Error()) + ")"
			}
			return errors.New(msg)
		case <-t.C:
		}
	}
}
