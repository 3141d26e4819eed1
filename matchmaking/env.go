package matchmaking

// statSetter is the optional part of a fleet that publishes statistics;
// *fleet.Fleet has it.
type statSetter interface {
	SetStat(name string, value int64)
}
