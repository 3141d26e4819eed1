package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// perSec is n per second of r's window, at the full rate: a size that ran
// slower has its counts multiplied back.
func (r result) perSec(n float64) float64 { return n * float64(r.slow) / r.window.Seconds() }

// keptUp is the share of the heartbeats the servers should have made in
// the window that they made and that succeeded.
func (r result) keptUp() float64 {
	return r.perSec(float64(r.sim.heartbeats-r.sim.heartbeatErrs)) / r.expectedHB
}

// scale is what Redis's figures are multiplied by to estimate them at the
// full rate: 1 when the servers kept up with 90% of their heartbeats, and
// otherwise the inverse of keptUp. The servers' operations fall behind with
// their heartbeats, so Redis's work scales with it; failed calls and
// reconnections also cost Redis, so the estimate errs high.
func (r result) scale() float64 {
	if k := r.keptUp(); k < 0.9 && k > 0 {
		return 1 / k
	}
	return 1
}

func (r result) cmds() float64   { return r.scale() * r.perSec(float64(r.redis.commands)) }
func (r result) in() float64     { return r.scale() * r.perSec(float64(r.redis.netIn)) }
func (r result) out() float64    { return r.scale() * r.perSec(float64(r.redis.netOut)) }
func (r result) cpuPct() float64 { return 100 * r.scale() * r.perSec(r.redis.cpu) }

func (r result) pct(p int) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, len(r.lat)*p/100)]
}

// printTables prints the results as two Markdown tables: the cost to Redis,
// then what the simulated servers did to cause it. Growth is from the
// previous K of the same design; "vs current" compares with the current
// design at the same K.
func printTables(w io.Writer, rows []result) {
	scaled, slowed := false, false
	fmt.Fprintln(w, "| design | K | run slower | heartbeats kept up | record changes/s | Redis cmds/s | in B/s | out B/s | Redis CPU (% of a core) | round trips / heartbeat | heartbeat p50 | heartbeat p99 | growth cmds/s | growth in | growth out | growth CPU | CPU vs current | out vs current |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for i, r := range rows {
		slowed = slowed || r.slow > 1
		var growth [4]string
		if i > 0 && rows[i-1].design.name == r.design.name {
			p := rows[i-1]
			growth = [4]string{ratio(r.cmds(), p.cmds()), ratio(r.in(), p.in()), ratio(r.out(), p.out()), ratio(r.cpuPct(), p.cpuPct())}
		}
		var vs [2]string
		for _, c := range rows {
			if c.design.name == designs[0].name && c.k == r.k && r.design.name != c.design.name {
				vs = [2]string{ratio(r.cpuPct(), c.cpuPct()), ratio(r.out(), c.out())}
			}
		}
		mark := ""
		if r.scale() > 1 {
			mark, scaled = "*", true
		}
		fmt.Fprintf(w, "| %s | %d | ×%d | %.0f%% | %.1f | %s%s | %s%s | %s%s | %.1f%%%s | %.2f | %v | %v | %s | %s | %s | %s | %s | %s |\n",
			r.design.name, r.k, r.slow, 100*r.keptUp(), r.perSec(float64(r.sim.changes)),
			si(r.cmds()), mark, si(r.in()), mark, si(r.out()), mark, r.cpuPct(), mark,
			float64(r.sim.heartbeatRTs)/float64(max(1, r.sim.heartbeats)), round(r.pct(50)), round(r.pct(99)),
			growth[0], growth[1], growth[2], growth[3], vs[0], vs[1])
	}

	if slowed {
		fmt.Fprintln(w, "\nA size that ran N× slower had its heartbeat and workload N times slower; its per-second figures (here and below) are multiplied by N, its latencies are as measured.")
	}
	if scaled {
		fmt.Fprintln(w, "\n\\* The servers kept up with less than 90% of their heartbeats (the machine's cores ran out): Redis's figures measured in the window are scaled up to the full rate. Failed calls and reconnections cost Redis too, so these err high; the latencies are the starved servers' own.")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| design | K | calls per server per s: claims | releases | locates (missed) | takes (missed) | arrives (missed) | handoff puts | errors | record size | client round trips/s | Redis CPU per round trip | Redis connections | simulator CPU (cores) | other CPU (cores) |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		c := r.sim
		per := func(o op) float64 { return r.perSec(float64(c.ok[o]+c.miss[o]+c.failed[o])) / float64(r.k) }
		missed := func(o op) string {
			return fmt.Sprintf("%.1f%%", 100*float64(c.miss[o])/float64(max(1, c.ok[o]+c.miss[o]+c.failed[o])))
		}
		errs := c.heartbeatErrs
		for o := range numOps {
			errs += c.failed[o]
		}
		perRT := time.Duration(r.redis.cpu / float64(max(1, c.roundTrips)) * float64(time.Second))
		fmt.Fprintf(w, "| %s | %d | %.2f | %.2f | %.2f (%s) | %.2f (%s) | %.2f (%s) | %.2f | %d | %d B | %s | %v | %d | %.2f | %.2f |\n",
			r.design.name, r.k, per(opClaim), per(opRelease), per(opLocate), missed(opLocate), per(opTake), missed(opTake),
			per(opArrive), missed(opArrive), per(opPut),
			errs, c.recordBytes/max(1, c.heartbeats), si(r.perSec(float64(c.roundTrips))), round(perRT), r.clients,
			r.simCPU.Seconds()/r.window.Seconds(), r.otherCPU.Seconds()/r.window.Seconds())
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Where Redis's CPU went (INFO commandstats over the window): the time inside commands, and the rest (reading, parsing, replying, the event loop).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| design | K | inside commands | outside them | commands by share of Redis CPU (µs per call) |")
	fmt.Fprintln(w, "|---|--:|--:|--:|---|")
	for _, r := range rows {
		type cmd struct {
			name string
			commandStat
		}
		var cmds []cmd
		var inside int64
		for name, st := range r.redis.byCommand {
			cmds = append(cmds, cmd{name, st})
			inside += st.usec
		}
		slices.SortFunc(cmds, func(a, b cmd) int { return cmp.Compare(b.usec, a.usec) })
		total := r.redis.cpu * 1e6
		var top []string
		for _, c := range cmds[:min(8, len(cmds))] {
			top = append(top, fmt.Sprintf("%s %.0f%% (%.1f)", c.name, 100*float64(c.usec)/total, float64(c.usec)/float64(c.calls)))
		}
		fmt.Fprintf(w, "| %s | %d | %.0f%% | %.0f%% | %s |\n", r.design.name, r.k, 100*float64(inside)/total, 100*(1-float64(inside)/total), strings.Join(top, ", "))
	}
	for _, r := range rows {
		if r.firstErr != nil {
			fmt.Fprintf(w, "\n%s, K=%d, first error of the run: %v\n", r.design.name, r.k, r.firstErr)
		}
	}
}

// ratio formats a/b as a factor.
func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	switch v := a / b; {
	case v >= 10:
		return fmt.Sprintf("×%.0f", v)
	case v >= 1:
		return fmt.Sprintf("×%.1f", v)
	default:
		return fmt.Sprintf("×%.2f", v)
	}
}

// si formats x with a k, M or G suffix.
func si(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.2f G", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.2f M", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1f k", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// round rounds d to about three significant digits, for the table.
func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
