package fleet_test

import (
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/fleettest"
)

// Records that are unsigned or signed with another key are dropped from
// the view and counted: whoever can write to the backplane cannot add a
// member, nor steer the relay to an address of their choosing.
func TestUnsignedRecordsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := []byte("the fleet's security key")
		c := fleettest.Start(t, 2, func(_ int, cfg *fleet.Config) { cfg.Key = key })
		c.Add(fleet.Config{NodeID: "other-key", Heartbeat: hb, InternalAddress: "127.0.0.1:9999", Key: []byte("some other key, 16+")})
		bp, err := c.Store.Cluster("default")
		if err != nil {
			t.Fatal(err)
		}
		evil := []byte(`{"id":"evil","internal":"127.0.0.1:6379","state":"ready","load":0,"max_load":200}`)
		forged := []byte(`{"id":"forged","internal":"127.0.0.1:6379","state":"ready","load":0,"max_load":200,"sig":"` +
			"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" + `"}`)
		for id, data := range map[string][]byte{"evil": evil, "forged": forged} {
			if _, _, err := bp.Heartbeat(t.Context(), backplane.Node{ID: id, Data: data}, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * hb)
		synctest.Wait()
		s0 := c.Servers[0]
		if got := ids(s0.Fleet); got != "[s0 s1]" {
			t.Fatalf("s0 sees %s; want only the servers with the fleet's key", got)
		}
		for _, id := range []string{"evil", "forged", "other-key"} {
			if addr, ok := s0.InternalAddress(id); ok {
				t.Errorf("s0 would relay to %s at %s", id, addr)
			}
		}
		// Each record is counted once, not at every heartbeat that reads
		// it again. The other-key server's record changes as it finds
		// the others: it publishes at a heartbeat the ids it found at the
		// one before (Foreign), the last of them at its third; how many
		// of its versions s0 read depends on the order of heartbeats at
		// one instant. Three or more records, then no more.
		time.Sleep(2 * hb)
		synctest.Wait()
		n := s0.RejectedRecords()
		if n < 3 {
			t.Errorf("RejectedRecords = %d, want the 3 servers' records counted", n)
		}
		time.Sleep(3 * hb)
		synctest.Wait()
		if m := s0.RejectedRecords(); m != n {
			t.Errorf("RejectedRecords went from %d to %d over 3 heartbeats of unchanged records, want each record counted once", n, m)
		}
	})
}

// A server with another key changes its record every heartbeat; it is
// logged once, naming the setting to fix, and once more only if it comes
// back after its records left the store.
func TestOtherKeyLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fleettest.Start(t, 0, nil)
		bp, err := c.Store.Cluster("default")
		if err != nil {
			t.Fatal(err)
		}
		var logs fleettest.Logs
		f := startFleet(t, fleet.Config{NodeID: "s0", Heartbeat: hb, Key: []byte("the fleet's security key")}, bp, slog.New(&logs))
		defer f.run.End(t)

		const msg = "dropped the records of a server not signed with this server's key"
		otherKey := fleet.Config{NodeID: "other", Heartbeat: hb, InternalAddress: "127.0.0.1:9999", Key: []byte("some other key, 16+")}
		other := c.Add(otherKey)
		for i := range 5 {
			other.SetStat("queue:duel", int64(i+1))
			time.Sleep(hb)
			synctest.Wait()
		}
		if n := logs.Count(msg); n != 1 {
			t.Errorf("logged %d times over 5 heartbeats of changed records, want once", n)
		}
		if n := f.RejectedRecords(); n < 2 {
			// How many of the 5 records a heartbeat read depends on the
			// heartbeats' jitter.
			t.Errorf("RejectedRecords = %d, want each record read counted, not only the first", n)
		}
		other.Stop() // it leaves: its record is gone at once
		time.Sleep(2 * hb)
		synctest.Wait()
		c.Add(otherKey)
		time.Sleep(2 * hb)
		synctest.Wait()
		if n := logs.Count(msg); n != 2 {
			t.Errorf("logged %d times, want once more for the server that came back", n)
		}
	})
}
