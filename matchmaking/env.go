package matchmaking

import (
	"math"

	"github.com/muster-gg/muster/internal/hostenv"
)

// env is what the module uses of its host and fleet. hostEnv is the real
// one; tests move players without sockets through their own.
type env interface {
	hostenv.Env
	// Seated reports whether player id has a seat in a room here.
	Seated(id string) bool
	// FreeSeats is the load this server may still take: max-load minus
	// its exact current load, which counts rooms just opened (the load
	// the fleet publishes lags by up to a second and a heartbeat).
	// math.MaxInt without a limit; may be negative.
	FreeSeats() int
}

// hostEnv is the env of a module attached to a room host.
type hostEnv[S, I, P any] struct{ hostenv.Host[S, I, P] }

func (e hostEnv[S, I, P]) Seated(id string) bool { return e.H.RoomOf(id) != "" }

func (e hostEnv[S, I, P]) FreeSeats() int {
	f := e.H.Fleet()
	if f == nil {
		return math.MaxInt
	}
	limit := f.Config().MaxLoad
	if limit <= 0 {
		return math.MaxInt
	}
	return limit - e.H.Load()
}

// statSetter is the optional part of a fleet that publishes statistics;
// *fleet.Fleet has it.
type statSetter interface {
	SetStat(name string, value int64)
}
