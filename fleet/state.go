package fleet

import "maps"

// selfLocked returns this server's current record. f.mu must be held.
func (f *Fleet) selfLocked() Node {
	return Node{
		ID:              f.cfg.NodeID,
		Cluster:         f.cfg.Cluster,
		Region:          f.cfg.Region,
		InternalAddress: f.cfg.InternalAddress,
		PublicAddress:   f.cfg.PublicAddress,
		State:           f.stateLocked(),
		Load:            f.shown,
		LoadStep:        f.stepLocked(),
		MaxLoad:         f.cfg.MaxLoad,
		Stats:           maps.Clone(f.stats),
		Instance:        f.instance,
		Foreign:         f.foreignLocked(maxForeign),
	}
}

// stateLocked returns this server's state, judged by its exact load. f.mu
// must be held.
func (f *Fleet) stateLocked() State {
	switch {
	case f.leaving:
		return StateLeaving
	case f.draining:
		return StateDraining
	case !f.ready:
		return StateStarting
	case f.load >= f.cfg.MaxLoad:
		return StateFull
	}
	return StateReady
}

// State returns this server's state.
func (f *Fleet) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stateLocked()
}

// MarkReady moves a starting server to ready (or full, at its max-load).
// It has no effect once the server drains.
func (f *Fleet) MarkReady() {
	f.mu.Lock()
	f.ready = true
	f.mu.Unlock()
	f.heartbeatNow()
}

// SetLoad sets this server's load. The published load follows it in steps
// of LoadStep, so that the record does not change at every heartbeat, but
// exactly at 0 and within a step of max-load, where the others decide
// whether a match still fits; the state is judged by the exact load.
func (f *Fleet) SetLoad(load int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.load = load
	step := f.cfg.LoadStep
	near := f.cfg.MaxLoad - step // above it, the load is published exactly
	if step < 0 || abs(load-f.shown) >= step || load == 0 || load > near || f.shown > near {
		f.shown = load
	}
	f.view[f.cfg.NodeID] = f.selfLocked()
}

func abs(n int) int { return max(n, -n) }

// stepLocked is the LoadStep of this server's record: the step while the
// published load is not the exact one, else 0. f.mu must be held.
func (f *Fleet) stepLocked() int {
	if f.shown == f.load {
		return 0
	}
	return f.cfg.LoadStep
}

// Load returns this server's load and max-load.
func (f *Fleet) Load() (load, maxLoad int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load, f.cfg.MaxLoad
}

// SetStat publishes a module's statistic, such as "queue:duel", with the
// next heartbeat.
func (f *Fleet) SetStat(name string, value int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats[name] = value
	f.view[f.cfg.NodeID] = f.selfLocked()
}

// Self returns this server's record with its exact load; the others see
// the load in steps of LoadStep.
func (f *Fleet) Self() Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.selfLocked()
	n.Load, n.LoadStep = f.load, 0
	return n
}
