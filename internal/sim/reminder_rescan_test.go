package sim

import (
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
)

// TestHomeAdoptsAReminderThatLandedLate: a reminder record stored after its home read the
// shard's reminders — a register that failed its quorum yet landed, or one an earlier home
// issued before a handoff — is fired and removed by the home, which reads its reminders
// again. Before, it stayed stored and unfired until the shard's next start (a chaos run: a
// reminder fired 70 s late, across the full restart).
func TestHomeAdoptsAReminderThatLandedLate(t *testing.T) {
	typ := testType("counter", 1)
	s := New(Options{Seed: 1, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{typ}, NumberOfShards: 10, Durable: true})
	for range 3 {
		s.AddNode(nil, "1")
	}
	startThree(s)
	if !s.RunUntil(s.Converged, 30*time.Second) {
		t.Fatalf("no convergence:\n%s", s.Status())
	}
	prefix := datadir.Prefix(datadir.FamilyReminder)
	s.SendRemind(1, "counter", "c1", 3*time.Second)
	if !s.RunUntil(func() bool { return len(s.storedRecords(prefix, false)) == 1 }, 5*time.Second) {
		t.Fatal("the reminder was not stored")
	}
	rec := s.storedRecords(prefix, false)[0]
	if !s.RunUntil(func() bool { return len(s.storedRecords(prefix, false)) == 0 && len(s.RemindersPending()) == 0 }, 20*time.Second) {
		t.Fatalf("the reminder did not fire: %v", s.CheckReminders())
	}

	// A copy of it under another name, due already, written to the store behind its home's
	// back with the home's epoch: what a late write leaves.
	home := 0
	for _, n := range s.Nodes() {
		if _, ok := n.E.Shards("counter")[s.extract("c1")]; ok && n.Alive {
			home = n.Index
		}
	}
	if home == 0 {
		t.Fatal("no home of c1's shard")
	}
	late := remember.Write{Key: rec.Key + "-late", Value: rec.Value, Epoch: rec.Version.Epoch}
	var werr error
	written := false
	s.Node(home).store.call(func(m *remember.Machine) remember.CallID { return m.Write(s.Now(), []remember.Write{late}) },
		func(a remember.Answer) { werr, written = a.Err, true })
	if !s.RunUntil(func() bool { return written }, 5*time.Second) || werr != nil {
		t.Fatalf("the late record was not written: %v", werr)
	}
	landed := s.Now()
	if !s.RunUntil(func() bool { return len(s.storedRecords(prefix, false)) == 0 }, 40*time.Second) {
		t.Fatalf("the late reminder is still stored %v after it landed (%d records)", s.Now().Sub(landed), len(s.storedRecords(prefix, false)))
	}
	t.Logf("the late reminder fired and was removed %v after it landed", s.Now().Sub(landed).Round(time.Millisecond))
}
