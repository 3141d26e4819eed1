package muster

import (
	"time"

	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/fleet"
)

// StopBound is the longest a server of cfg takes from SIGTERM to its exit
// on a machine with time to spare: the drain timeout (the wait for its
// rooms to end), the drain's end (the players of the rooms left are told,
// room.drain-grace later the rooms are closed, and they end within
// another grace), the drain's last part and leaving the fleet (a
// backplane call each, a quarter heartbeat), and the shutdown of the
// listeners and connections. Give the server more than that before it is
// killed (docker compose's stop_grace_period, Kubernetes'
// terminationGracePeriodSeconds), with a margin for a loaded machine, or a
// drain that runs to its timeout is cut short: the rooms left are not
// ended cleanly and the server's claims wait for their expiry.
func StopBound(cfg config.Config) time.Duration {
	call := fleet.Config{Heartbeat: time.Duration(cfg.Server.Fleet.Heartbeat)}.CallBound()
	return time.Duration(cfg.Server.Drain.Timeout) + 2*time.Duration(cfg.Room.DrainGrace) + 2*call + shutdownTimeout
}
