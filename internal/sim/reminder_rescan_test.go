package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// TestHomeAdoptsAReminderThatLandedLate: a reminder record stored after its home read the
// shard's reminders — a register that failed its quorum yet landed, or one an earlier home
// issued before a handoff — is fired and removed by the home, which reads its reminders
// again. Before, it stayed stored and unfired until the shard's next start (a chaos run: a
// reminder fired 70 s late, across the full restart).
func TestHomeAdoptsAReminderThatLandedLate(t *testing.T) {
	s := threeDurable(t)
	rec, home := fireReminder(t, s, "c1")
	prefix := datadir.Prefix(datadir.FamilyReminder)
	writeLate(t, s, home, rec)
	landed := s.Now()
	if !s.RunUntil(func() bool { return len(s.storedRecords(prefix, false)) == 0 }, 40*time.Second) {
		t.Fatalf("the late reminder is still stored %v after it landed (%d records)", s.Now().Sub(landed), len(s.storedRecords(prefix, false)))
	}
	t.Logf("the late reminder fired and was removed %v after it landed", s.Now().Sub(landed).Round(time.Millisecond))
}

// TestHomeFindsAReminderWhenItLands: long after its claim, when its reads again are minutes
// apart, a home fires a reminder record another member wrote as soon as it reaches the
// home's replica — by that member's write, or by anti-entropy when the write reached only
// the other replicas. Before, it waited for the next read on the timer (up to 5 minutes; a
// chaos run: a reminder still stored 90 s after the faults).
func TestHomeFindsAReminderWhenItLands(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  bool // the home does not hear the write: anti-entropy brings it
	}{{"by a peer's write", false}, {"by anti-entropy", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := threeDurable(t)
			// An entity whose home does not lead the metadata group: the writer, cut from
			// the home, still reaches the group.
			var rec remember.Record
			home := 0
			for i := 1; home == 0 || tc.cut && s.Node(1).store.m.MetaStatus().Leader == s.Node(home).ID; i++ {
				if i > 10 {
					t.Fatal("every entity tried is homed on the metadata group's leader")
				}
				rec, home = fireReminder(t, s, shard.EntityID(fmt.Sprintf("c%d", i)))
			}
			prefix := datadir.Prefix(datadir.FamilyReminder)
			s.RunFor(8 * time.Minute) // the home's reads again: 15 s, 45 s, … 465 s after its claim, then 765 s
			writer := home%3 + 1
			if tc.cut {
				s.Net.Cut(home, writer)
				s.Net.Cut(writer, home)
			}
			late := writeLate(t, s, writer, rec)
			landed := s.Now()
			if tc.cut {
				if onHome := s.Node(home).store.disk.Records(); slices.ContainsFunc(onHome, func(r remember.Record) bool { return r.Key == late.Key }) {
					t.Fatal("the home stored the record through the cut")
				}
				s.Net.Heal()
			}
			if !s.RunUntil(func() bool { return len(s.storedRecords(prefix, false)) == 0 }, 30*time.Second) {
				t.Fatalf("the late reminder is still stored %v after it landed (%d records)", s.Now().Sub(landed), len(s.storedRecords(prefix, false)))
			}
			t.Logf("the late reminder fired and was removed %v after it was written", s.Now().Sub(landed).Round(time.Millisecond))
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// writeLate writes a copy of reminder record rec under another name, with its epoch,
// through member i's store behind every home's back — what a late write leaves — and
// returns it.
func writeLate(t *testing.T, s *Sim, i int, rec remember.Record) remember.Write {
	t.Helper()
	late := remember.Write{Key: rec.Key + "-late", Value: rec.Value, Epoch: rec.Version.Epoch}
	var werr error
	written := false
	s.Node(i).store.call(func(m *remember.Machine) remember.CallID { return m.Write(s.Now(), []remember.Write{late}) },
		func(a remember.Answer) { werr, written = a.Err, true })
	if !s.RunUntil(func() bool { return written }, 5*time.Second) || werr != nil {
		t.Fatalf("the late record was not written: %v", werr)
	}
	return late
}

// threeDurable starts three durable members hosting type counter and waits for them to
// converge.
func threeDurable(t *testing.T) *Sim {
	t.Helper()
	typ := testType("counter", 1)
	s := New(Options{Seed: 1, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{typ}, NumberOfShards: 10, Durable: true})
	for range 3 {
		s.AddNode(nil, "1")
	}
	startThree(s)
	if !s.RunUntil(s.Converged, 30*time.Second) {
		t.Fatalf("no convergence:\n%s", s.Status())
	}
	return s
}

// fireReminder has a reminder of counter entity fire and be removed, and returns the
// reminder's record as it was stored and the index of entity's home.
func fireReminder(t *testing.T, s *Sim, entity shard.EntityID) (remember.Record, int) {
	t.Helper()
	prefix := datadir.Prefix(datadir.FamilyReminder)
	s.SendRemind(1, "counter", entity, 3*time.Second)
	if !s.RunUntil(func() bool { return len(s.storedRecords(prefix, false)) == 1 }, 5*time.Second) {
		t.Fatal("the reminder was not stored")
	}
	rec := s.storedRecords(prefix, false)[0]
	if !s.RunUntil(func() bool { return len(s.storedRecords(prefix, false)) == 0 && len(s.RemindersPending()) == 0 }, 20*time.Second) {
		t.Fatalf("the reminder did not fire: %v", s.CheckReminders())
	}
	home := 0
	for _, n := range s.Nodes() {
		if _, ok := n.E.Shards("counter")[s.extract(entity)]; ok && n.Alive {
			home = n.Index
		}
	}
	if home == 0 {
		t.Fatalf("no home of %s's shard", entity)
	}
	return rec, home
}
