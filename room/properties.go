package room

import "maps"

// SetProperty sets the room's property key to value; an empty value
// removes it. Properties are the game's description of the room (a map,
// a mode, a score) that the room's watchers are told with its state: a
// federation node reports them home with its members. A change tells the
// watchers at once (they coalesce: see RoomWatcher); setting a property to
// the value it has tells nobody, and so does a change after the room
// ended. Safe from the game's hooks and from any goroutine.
func (r *Room[Sim, Input, Player]) SetProperty(key, value string) {
	r.mu.Lock()
	old, had := r.props[key]
	if r.ended || (had && old == value) || (!had && value == "") {
		r.mu.Unlock()
		return
	}
	if value == "" {
		delete(r.props, key)
	} else {
		if r.props == nil {
			r.props = make(map[string]string)
		}
		r.props[key] = value
	}
	r.mu.Unlock()
	r.host.roomChanged(r, false, nil)
}

// Properties returns a copy of the room's properties (see SetProperty),
// nil when it has none.
func (r *Room[Sim, Input, Player]) Properties() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.props) == 0 {
		return nil
	}
	return maps.Clone(r.props)
}
