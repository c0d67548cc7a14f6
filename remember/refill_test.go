package remember

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// majorities: plain majorities, so that 2 of 3 replicas make a quorum; refill markers in
// dir (none when empty).
func majorities(dir string) func(*Config) {
	return func(cfg *Config) {
		if dir != "" {
			cfg.RefillMarker = filepath.Join(dir, filepath.Base(cfg.Dir)+".refill")
		}
	}
}

func writeKeys(t *testing.T, s *Store, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("%s%04d", prefix, i)
		if err := s.Write(testContext(t), Write{Key: k, Value: []byte(k)}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

// holdsAll reports whether s's own replica holds every key.
func holdsAll(t *testing.T, s *Store, keys []string) bool {
	es, err := readEntries(s.db, keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.absent() {
			return false
		}
	}
	return true
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRebuiltReplicaRefillsBeforeItCounts: a replica whose store was moved aside (the refill
// marker written, as `shardctl data rebuild` does) answers reads of a unit with ErrRefilling
// until the unit's host has synced it — with one of the unit's other two replicas down, a
// read that would need its answer fails rather than miss a write — and then counts again,
// holding every acknowledged write, its marker gone.
func TestRebuiltReplicaRefillsBeforeItCounts(t *testing.T) {
	markers := t.TempDir()
	returning := false
	c := unitCluster(t, 5, func(cfg *Config) {
		majorities(markers)(cfg)
		cfg.Returning = returning
	})
	u := Unit{Type: "t", Shard: "1"}
	c.stores[0].Host(u, 1)
	keys := writeUnitKeys(t, c.stores[0], "u/1/a", 300)
	set := c.stores[0].Units()[0].Config.Set
	var others []int
	for i := range c.stores {
		if i != 0 && slices.Contains(set, c.id(i)) {
			others = append(others, i)
		}
	}
	down, rebuilt := others[0], others[1]
	returning = true
	c.closeStore(rebuilt)
	if err := os.Rename(c.dirs[rebuilt], c.dirs[rebuilt]+".damaged"); err != nil {
		t.Fatal(err)
	}
	marker := c.config(rebuilt).RefillMarker
	if err := os.WriteFile(marker, []byte("rebuilt by the test"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.closeStore(down)
	s2 := c.open(rebuilt)
	if st := s2.Refill(); !st.Active || st.Reason != "rebuilt by the test" {
		t.Fatalf("Refill() = %+v", st)
	}
	// 0 answers, the rebuilt replica refuses, the third is down: no read quorum, and the
	// reason is given.
	_, _, err := s2.Get(testContext(t), keys[0])
	if !errors.Is(err, ErrNoQuorum) || !strings.Contains(err.Error(), "refilling") {
		t.Fatalf("read while refilling with one peer down: %v", err)
	}
	more := writeUnitKeys(t, c.stores[0], "u/1/b", 50) // stored on 0 and the rebuilt one: writes count
	waitUntil(t, "the rebuilt replica to count the unit it must refill", func() bool { return s2.Refill().Need == 1 })
	c.open(down)
	waitUntil(t, "the replica refilled", func() bool { return !s2.Refill().Active })
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker left: %v", err)
	}
	if !holdsAll(t, s2, append(keys, more...)) {
		t.Fatal("refilled replica lacks acknowledged writes")
	}
	if rec, found, err := s2.Get(testContext(t), keys[7]); err != nil || !found || string(rec.Value) != keys[7] {
		t.Fatalf("read after the refill: %v %v %v", rec, found, err)
	}
}

// writeUnitKeys writes n keys under prefix, fenced by epoch 1 (the host's).
func writeUnitKeys(t *testing.T, s *Store, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("%s%04d", prefix, i)
		if err := s.Write(testContext(t), Write{Key: k, Value: []byte(k), Epoch: 1}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

// TestEmptyReturningStoreRefills: a member that ran before and comes back with an empty
// store and no marker (its disk replaced) refills all the same: it counts in no unit's
// reads until each unit's host synced it.
func TestEmptyReturningStoreRefills(t *testing.T) {
	markers := t.TempDir()
	returning := false
	c := unitCluster(t, 3, func(cfg *Config) {
		majorities(markers)(cfg)
		cfg.Returning = returning // a new cluster: its stores start empty
	})
	c.stores[0].Host(Unit{Type: "t", Shard: "1"}, 1)
	keys := writeUnitKeys(t, c.stores[0], "u/1/a", 200)
	c.closeStore(2)
	if err := os.RemoveAll(c.dirs[2]); err != nil {
		t.Fatal(err)
	}
	returning = true
	s2 := c.open(2)
	if st := s2.Refill(); !st.Active || !strings.Contains(st.Reason, "empty") {
		t.Fatalf("Refill() = %+v", st)
	}
	waitUntil(t, "the replica refilled", func() bool { return !s2.Refill().Active })
	if !holdsAll(t, s2, keys) {
		t.Fatal("refilled replica lacks acknowledged writes")
	}
}

// TestNewReplicaCatchesUpOnTheMetadata: a member's empty store that the placement names a
// voter joins the metadata group as a new replica (the leader replaces the one whose
// storage was lost: 2 of 3 kept theirs) and then holds every metadata write.
func TestNewReplicaCatchesUpOnTheMetadata(t *testing.T) {
	c := newCluster(t, 3, majorities(""))
	keys := writeKeys(t, c.stores[0], "a", 100)
	c.closeStore(2)
	if err := os.RemoveAll(c.dirs[2]); err != nil {
		t.Fatal(err)
	}
	s1 := c.open(2) // not Returning: a new member
	waitUntil(t, "the new replica caught up", func() bool { return s1.MetaStatus().Voter && holdsAll(t, s1, keys) })
	if st := s1.Refill(); st.Active {
		t.Fatalf("a new replica of the metadata refills: %+v", st)
	}
}

// refillRead starts a read of the metadata key "k" on machine a, whose metadata set is set
// (a first), with a's own replica refilling when selfRefills; it answers a's disk and feeds
// the answers of the peers in answered (ErrRefilling, marked so, from those in refilling).
// It returns the machine, the read's call and its answer, if it has one.
func refillRead(t *testing.T, set []NodeID, selfRefills bool, answered, refilling []NodeID) (*Machine, CallID, Answer, bool) {
	t.Helper()
	m, err := NewMachine(MachineConfig{Self: "a", Layout: testLayout{}, Timeout: time.Second, AntiEntropyInterval: -1}, DiskState{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	m.SetPlacement(t0, FixedPlacement(set...)())
	us := m.units.get(Unit{Type: "t", Shard: "1"})
	us.hosted, us.cfg = true, &UnitConfig{Set: set}
	if selfRefills {
		m.StartRefill(t0, "the test")
	}
	id := m.Get(t0, "u/1/k", 0)
	rd := m.Ready()
	if len(rd.Disk) != 1 || len(rd.Sends) != len(set)-1 {
		t.Fatalf("one read: %d disk ops, %d sends", len(rd.Disk), len(rd.Sends))
	}
	env, err := wire.DecodeReplica(rd.Sends[0].Frame)
	if err != nil {
		t.Fatal(err)
	}
	m.DiskDone(t0, DiskResult{ID: rd.Disk[0].ID, entries: []entry{{}}})
	for _, p := range answered {
		recs := &pb.ReplicaRecords{Last: true}
		if slices.Contains(refilling, p) {
			recs.Error, recs.Refilling = fmt.Errorf("remember: %w", ErrRefilling).Error(), true
		}
		m.ReceiveEnvelope(t0, p, &pb.ReplicaEnvelope{RequestId: env.RequestId, Msg: &pb.ReplicaEnvelope_Records{Records: recs}})
	}
	a, ok := answers(m)[id]
	return m, id, a, ok
}

// TestReadsDoWithoutARefillingReplica: a read does without a replica that refills when its
// set may (quorum.go's excusable: every write majority of the set still meets a majority of
// the others), at once, not once the replica has refilled: in a set of two whose other
// member answers while this one refills, and in a set of four with two answers, one replica
// refilling and one silent. With two of three refilling it may not (one replica alone may
// miss a write): it asks them again until its timeout, and fails naming them as not counted.
func TestReadsDoWithoutARefillingReplica(t *testing.T) {
	if _, _, a, ok := refillRead(t, []NodeID{"a", "b"}, true, []NodeID{"b"}, nil); !ok || a.Err != nil {
		t.Fatalf("set of two, this replica refilling, the other answered: %+v %v", a, ok)
	}
	if _, _, a, ok := refillRead(t, []NodeID{"a", "b", "c", "d"}, false, []NodeID{"b", "c"}, []NodeID{"c"}); !ok || a.Err != nil {
		t.Fatalf("set of four, two answers, one refilling: %+v %v", a, ok)
	}
	if _, _, a, ok := refillRead(t, []NodeID{"a", "b", "c", "d"}, false, []NodeID{"c"}, []NodeID{"c"}); ok {
		t.Fatalf("set of four, one answer, one refilling: decided %+v", a)
	}
	m, id, a, ok := refillRead(t, []NodeID{"a", "b", "c"}, true, []NodeID{"b", "c"}, []NodeID{"b"})
	if ok {
		t.Fatalf("two of three refilling: decided at once %+v", a)
	}
	m.Tick(t0.Add(time.Second))
	a, ok = answers(m)[id]
	if !ok || !errors.Is(a.Err, ErrNoQuorum) || !strings.Contains(a.Err.Error(), "not counted: a, b") {
		t.Fatalf("two of three refilling, at the timeout: %+v %v", a, ok)
	}
	if strings.Contains(a.Err.Error(), "no answer within") {
		t.Errorf("names replicas that answered as silent: %v", a.Err)
	}
}

// TestRefillOfAUnitNobodyHosts: a replica rebuilt while its unit's shard runs nowhere (its
// host stopped hosting it, and no message came since) syncs the unit itself from the
// other replicas: its refill ends without a host, holding every acknowledged write.
// Without that the refill waited for the shard's next message (e2e
// TestDamagedStoreIsRebuiltFromThePeers: the rebuilt member never became ready).
func TestRefillOfAUnitNobodyHosts(t *testing.T) {
	markers := t.TempDir()
	returning := false
	c := unitCluster(t, 3, func(cfg *Config) {
		majorities(markers)(cfg)
		cfg.Returning = returning
	})
	u := Unit{Type: "t", Shard: "1"}
	c.stores[0].Host(u, 1)
	keys := writeUnitKeys(t, c.stores[0], "u/1/a", 300)
	c.stores[0].Unhost(u)
	const rebuilt = 2
	returning = true
	c.closeStore(rebuilt)
	if err := os.Rename(c.dirs[rebuilt], c.dirs[rebuilt]+".damaged"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.config(rebuilt).RefillMarker, []byte("rebuilt by the test"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := c.open(rebuilt)
	waitUntil(t, "the replica refilled with no host", func() bool { return !s.Refill().Active })
	if !holdsAll(t, s, keys) {
		t.Fatal("refilled replica lacks acknowledged writes")
	}
}
