package remember

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestQuorumWriteAndRead: a 3-member cluster writes to and reads from a majority; every
// member's disk holds the write soon (the third by anti-entropy at the latest).
func TestQuorumWriteAndRead(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := testContext(t)
	a, b := c.stores[0], c.stores[1]
	if err := a.Write(ctx, Write{Key: "coord/counter/alloc/1", Value: []byte("member-a")}, Write{Key: "coord/counter/alloc/2", Value: []byte("member-b")}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		waitFor(t, fmt.Sprintf("member %d to hold the write", i), func() bool {
			return string(c.local(i, "coord/counter/alloc/1").rec.Value) == "member-a"
		})
	}
	got, found, err := b.Get(ctx, "coord/counter/alloc/2")
	if err != nil || !found || string(got.Value) != "member-b" || got.Version.Writer != c.hosts[0].ID().String() {
		t.Fatalf("Get: %+v %v %v", got, found, err)
	}
	if _, found, err := b.Get(ctx, "coord/counter/alloc/3"); err != nil || found {
		t.Fatalf("Get of a missing key: found %v, %v", found, err)
	}
	recs, err := c.stores[2].Scan(ctx, "coord/counter/")
	if err != nil || len(recs) != 2 || recs[0].Key != "coord/counter/alloc/1" || recs[1].Key != "coord/counter/alloc/2" {
		t.Fatalf("Scan: %+v %v", recs, err)
	}
	// A later write by another member wins (its clock has seen the first).
	if err := b.Write(ctx, Write{Key: "coord/counter/alloc/1", Value: []byte("member-c")}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := a.Get(ctx, "coord/counter/alloc/1"); string(got.Value) != "member-c" {
		t.Errorf("after an overwrite: %q", got.Value)
	}
}

// TestWriteWithoutQuorum: one stopped voter of three stalls nothing (a majority is
// enough); with two stopped, metadata writes and reads fail after the timeout with
// ErrNoQuorum, and succeed again once one is back.
func TestWriteWithoutQuorum(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) { cfg.Timeout = 300 * time.Millisecond })
	ctx := testContext(t)
	c.closeStore(2)
	if err := c.stores[0].Write(ctx, Write{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatalf("write with one member of three gone: %v", err)
	}
	if _, found, err := c.stores[1].Get(ctx, "k"); err != nil || !found {
		t.Fatalf("read with one member of three gone: %v %v", found, err)
	}
	c.closeStore(1)
	start := time.Now()
	err := c.stores[0].Write(ctx, Write{Key: "k", Value: []byte("w")})
	var me *MetaError
	if !errors.As(err, &me) || !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("write with two members gone: %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 2*time.Second {
		t.Errorf("failed after %v, timeout 300ms", d)
	}
	if _, _, err := c.stores[0].Get(ctx, "k"); !errors.Is(err, ErrNoQuorum) {
		t.Errorf("read with two members gone: %v", err)
	}
	c.open(1)
	waitFor(t, "a write with two of three back", func() bool {
		return c.stores[0].Write(ctx, Write{Key: "k", Value: []byte("x")}) == nil
	})
	if rec, _, err := c.stores[1].Get(ctx, "k"); err != nil || string(rec.Value) != "x" {
		t.Fatalf("read with two of three back: %+v %v", rec, err)
	}
}

// TestCatchUpByAntiEntropy: a member closed while others write (a majority is enough),
// reopened on the same directory, receives every write and delete it missed.
func TestCatchUpByAntiEntropy(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := testContext(t)
	for i := range 50 {
		if err := c.stores[0].Write(ctx, Write{Key: fmt.Sprintf("re/counter/%d/e%d", i%3, i), Value: []byte("before")}); err != nil {
			t.Fatal(err)
		}
	}
	c.closeStore(2)
	var ws []Write
	for i := range 2000 {
		ws = append(ws, Write{Key: fmt.Sprintf("state/counter/%05d", i), Value: []byte(fmt.Sprint(i))})
	}
	ws = append(ws, Write{Key: "re/counter/0/e0", Delete: true})
	if err := c.stores[1].Write(ctx, ws...); err != nil {
		t.Fatal(err)
	}
	s := c.open(2)
	waitFor(t, "the reopened member to catch up", func() bool {
		return string(c.local(2, "state/counter/01999").rec.Value) == "1999" && c.local(2, "re/counter/0/e0").rec.Deleted
	})
	waitFor(t, "identical digests", func() bool {
		return *c.stores[0].digestSnapshot() == *s.digestSnapshot() && *c.stores[1].digestSnapshot() == *s.digestSnapshot()
	})
	for _, i := range []int{0, 1234, 1999} {
		if e := c.local(2, fmt.Sprintf("state/counter/%05d", i)); string(e.rec.Value) != fmt.Sprint(i) {
			t.Errorf("key %d: %+v", i, e)
		}
	}
	if st := s.Stats(); st.Merged < 2001 {
		t.Errorf("merged %d entries, want at least 2001", st.Merged)
	}
}

// TestConcurrentWritersConverge: five members writing the same keys at once end with the
// same record everywhere, the one with the highest version.
func TestConcurrentWritersConverge(t *testing.T) {
	c := newCluster(t, 5, nil)
	ctx := testContext(t)
	var wg sync.WaitGroup
	for m := range 5 {
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 25 {
					key := fmt.Sprintf("hot/%d", i%3)
					if err := c.stores[m].Write(ctx, Write{Key: key, Value: fmt.Appendf(nil, "m%d g%d i%d", m, g, i)}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	// A majority acknowledged each write; anti-entropy brings the rest.
	waitFor(t, "the members to converge", func() bool {
		for k := range 3 {
			key := fmt.Sprintf("hot/%d", k)
			e0 := c.local(0, key)
			for i := 1; i < 5; i++ {
				if ei := c.local(i, key); !sameState(&e0, &ei) || string(ei.rec.Value) != string(e0.rec.Value) {
					return false
				}
			}
		}
		return true
	})
	var writes, rounds uint64
	for _, s := range c.stores {
		st := s.Stats()
		writes += st.Writes
		rounds += st.WriteRounds
	}
	t.Logf("%d writes in %d rounds", writes, rounds)
}

// TestFencing: once GetFenced ran with epoch 6, writes with a lower epoch are refused with
// ErrFenced (also after the new owner wrote), and writes at or above it pass.
func TestFencing(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := testContext(t)
	old, next := c.stores[0], c.stores[1]
	const key = "state/counter/user-1"
	if err := old.Write(ctx, Write{Key: key, Value: []byte("1"), Epoch: 5}); err != nil {
		t.Fatal(err)
	}
	got, found, err := next.GetFenced(ctx, key, 6)
	if err != nil || !found || string(got.Value) != "1" || got.Version.Epoch != 5 {
		t.Fatalf("GetFenced: %+v %v %v", got, found, err)
	}
	for i := range 3 { // each voter applies it as the leader's commit index reaches it
		waitFor(t, fmt.Sprintf("member %d's floor to be 6", i), func() bool { return c.local(i, key).floor == 6 })
	}
	err = old.Write(ctx, Write{Key: key, Value: []byte("2"), Epoch: 5})
	var fe *FencedError
	if !errors.As(err, &fe) || !errors.Is(err, ErrFenced) || fe.Key != key || fe.Epoch != 5 || fe.Need != 6 {
		t.Fatalf("write of the fenced-off owner: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, key) || !strings.Contains(msg, "epoch 5") || !strings.Contains(msg, "epoch 6") {
		t.Errorf("message: %s", msg)
	}
	if err := next.Write(ctx, Write{Key: key, Value: []byte("2"), Epoch: 6}); err != nil {
		t.Fatal(err)
	}
	// A write of another key in the same call as a fenced one: the call fails, as fenced.
	err = old.Write(ctx, Write{Key: "other", Value: []byte("x"), Epoch: 5}, Write{Key: key, Value: []byte("3"), Epoch: 5})
	if !errors.Is(err, ErrFenced) {
		t.Errorf("mixed call: %v", err)
	}
	// An epoch-7 owner writes without GetFenced; epoch 6 is then refused by the record.
	if err := c.stores[2].Write(ctx, Write{Key: key, Value: []byte("7"), Epoch: 7}); err != nil {
		t.Fatal(err)
	}
	if err := next.Write(ctx, Write{Key: key, Value: []byte("x"), Epoch: 6}); !errors.Is(err, ErrFenced) {
		t.Errorf("epoch 6 after an epoch-7 record: %v", err)
	}
	if got, _, _ := old.Get(ctx, key); string(got.Value) != "7" {
		t.Errorf("final value %q", got.Value)
	}
}

// TestFencedWriteRace: writes of an old epoch racing a GetFenced either are in what
// GetFenced returns or fail: none is acknowledged and lost.
func TestFencedWriteRace(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := testContext(t)
	const key = "state/race"
	var acked sync.Map
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprint(i)
			if err := c.stores[0].Write(ctx, Write{Key: key, Value: []byte(v), Epoch: 1}); err == nil {
				acked.Store(i, true)
			} else if !errors.Is(err, ErrFenced) {
				t.Errorf("write %d: %v", i, err)
				return
			}
		}
	}()
	waitFor(t, "some acknowledged writes", func() bool { _, ok := acked.Load(20); return ok })
	got, _, err := c.stores[1].GetFenced(ctx, key, 2)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	_, _ = fmt.Sscan(string(got.Value), &n)
	acked.Range(func(k, _ any) bool {
		if k.(int) > n {
			t.Errorf("write %d was acknowledged but GetFenced returned %d", k, n)
		}
		return true
	})
}

// TestTombstones: a delete hides the key from Get and Scan everywhere and reaches a member
// that was away through anti-entropy.
func TestTombstones(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := testContext(t)
	if err := c.stores[0].Write(ctx, Write{Key: "re/t/1/a", Value: []byte("x")}, Write{Key: "re/t/1/b", Value: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	c.closeStore(2)
	if err := c.stores[0].Write(ctx, Write{Key: "re/t/1/a", Delete: true}); err != nil {
		t.Fatal(err)
	}
	got, found, err := c.stores[1].Get(ctx, "re/t/1/a")
	if err != nil || found || !got.Deleted {
		t.Errorf("Get of a deleted key: %+v %v %v", got, found, err)
	}
	recs, err := c.stores[1].Scan(ctx, "re/t/")
	if err != nil || len(recs) != 1 || recs[0].Key != "re/t/1/b" {
		t.Errorf("Scan: %+v %v", recs, err)
	}
	c.open(2)
	waitFor(t, "the tombstone to reach member 2", func() bool { return c.local(2, "re/t/1/a").rec.Deleted })
	// Written again after the delete: alive again.
	if err := c.stores[2].Write(ctx, Write{Key: "re/t/1/a", Value: []byte("z")}); err != nil {
		t.Fatal(err)
	}
	if got, found, _ := c.stores[0].Get(ctx, "re/t/1/a"); !found || string(got.Value) != "z" {
		t.Errorf("after a rewrite: %+v %v", got, found)
	}
}

// TestReadRepair: a read of a shard unit merges a quorum's answers and repairs the replica
// that lagged. (The metadata needs none: the group brings its replicas up to date.)
func TestReadRepair(t *testing.T) {
	c := unitCluster(t, 3, func(cfg *Config) {
		cfg.AntiEntropyInterval = -1 // only read repair can fix it
	})
	ctx := testContext(t)
	c.stores[0].Host(Unit{Type: "t", Shard: "1"}, 1)
	if err := c.stores[0].Write(ctx, Write{Key: "u/1/warm", Value: []byte("up"), Epoch: 1}); err != nil {
		t.Fatal(err) // the unit's configuration is stored
	}
	c.closeStore(2)
	if err := c.stores[0].Write(ctx, Write{Key: "u/1/k", Value: []byte("v"), Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	c.open(2)
	if e := c.local(2, "u/1/k"); !e.absent() {
		t.Fatalf("member 2 has %+v without anti-entropy", e)
	}
	got, found, err := c.stores[2].Get(ctx, "u/1/k")
	if err != nil || !found || string(got.Value) != "v" {
		t.Fatalf("Get: %+v %v %v", got, found, err)
	}
	waitFor(t, "read repair", func() bool { return string(c.local(2, "u/1/k").rec.Value) == "v" })
	recs, err := c.stores[2].Scan(ctx, "u/1/k")
	if err != nil || len(recs) != 1 {
		t.Errorf("Scan: %+v %v", recs, err)
	}
}

// TestBatching: concurrent writes share rounds and commits.
func TestBatching(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := testContext(t)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if err := c.stores[0].Write(ctx, Write{Key: fmt.Sprintf("b/%d/%d", g, i), Value: []byte("v")}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := c.stores[0].Stats()
	if st.Writes != 1280 || st.WriteRounds >= st.Writes/2 || st.Commits >= st.Writes/2 {
		t.Errorf("%d writes in %d rounds and %d commits: not batched", st.Writes, st.WriteRounds, st.Commits)
	}
	t.Logf("%d writes, %d rounds, %d commits; member 1: %d commits", st.Writes, st.WriteRounds, st.Commits, c.stores[1].Stats().Commits)
	// Reads batch too.
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, found, err := c.stores[1].Get(ctx, fmt.Sprintf("b/%d/0", g)); err != nil || !found {
				t.Errorf("get: %v %v", found, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("64 reads in %d rounds", c.stores[1].Stats().ReadRounds)
}

// TestMalformedFrames: garbage on the protocol is counted and logged and changes nothing.
func TestMalformedFrames(t *testing.T) {
	c := newCluster(t, 2, nil)
	ctx := testContext(t)
	for _, frame := range [][]byte{{0xff, 0xff}, {0x08, 0x09}, {0x08, 0x01, 0x1a, 0x00}} {
		if err := c.hosts[0].Send(ctx, c.hosts[1].ID(), Protocol, frame); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "3 malformed frames counted", func() bool { return c.stores[1].Stats().Malformed == 3 })
	if err := c.stores[0].Write(ctx, Write{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
}

// TestWriteLimits: bad keys and values are refused before anything is sent.
func TestWriteLimits(t *testing.T) {
	c := newCluster(t, 1, nil)
	ctx := testContext(t)
	s := c.stores[0]
	for _, w := range []Write{
		{Key: ""},
		{Key: strings.Repeat("k", MaxKeySize+1)},
		{Key: "k", Value: make([]byte, MaxValueSize+1)},
	} {
		if err := s.Write(ctx, w); err == nil {
			t.Errorf("write of a %d-byte key, %d-byte value accepted", len(w.Key), len(w.Value))
		}
	}
	// A member alone is its own quorum.
	if err := s.Write(ctx, Write{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, Write{Key: "k"}); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
}

// TestLargeScan: answers larger than a frame part come in several parts and are merged.
// Its rounds may take long (3,000 records of 1 KB from each replica, under the race
// detector, on a loaded machine): the test is about the parts, not the speed.
func TestLargeScan(t *testing.T) {
	c := newCluster(t, 3, func(c *Config) { c.Timeout = time.Minute })
	ctx := testContext(t)
	value := make([]byte, 1000)
	for batch := range 3 {
		var ws []Write
		for i := range 1000 {
			ws = append(ws, Write{Key: fmt.Sprintf("big/%d/%04d", batch, i), Value: value})
		}
		if err := c.stores[batch].Write(ctx, ws...); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := c.stores[1].Scan(ctx, "big/")
	if err != nil || len(recs) != 3000 {
		t.Fatalf("Scan: %d records, %v", len(recs), err)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i-1].Key >= recs[i].Key {
			t.Fatalf("not sorted at %d: %s, %s", i, recs[i-1].Key, recs[i].Key)
		}
	}
}

// TestFenceOnMissingKey: GetFenced of a key nobody wrote finds nothing but still fences.
func TestFenceOnMissingKey(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := testContext(t)
	if _, found, err := c.stores[0].GetFenced(ctx, "state/new", 3); err != nil || found {
		t.Fatalf("GetFenced: found %v, %v", found, err)
	}
	if err := c.stores[1].Write(ctx, Write{Key: "state/new", Value: []byte("x"), Epoch: 2}); !errors.Is(err, ErrFenced) {
		t.Errorf("epoch 2 after a fence at 3: %v", err)
	}
	if err := c.stores[1].Write(ctx, Write{Key: "state/new", Value: []byte("x")}); !errors.Is(err, ErrFenced) {
		t.Errorf("unfenced write after a fence at 3: %v", err)
	}
	if _, found, _ := c.stores[2].Get(ctx, "state/new"); found {
		t.Error("a fence alone reads as a record")
	}
}

// TestWriteFromOutsideTheSet: a member the metadata group removed drops its replica and its
// copy of the metadata; it writes and reads through the group, and holds nothing itself.
func TestWriteFromOutsideTheSet(t *testing.T) {
	c := newCluster(t, 2, nil)
	ctx := testContext(t)
	if err := c.stores[0].Write(ctx, Write{Key: "old", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	c.setMembers(1)
	waitFor(t, "member 0 to drop its replica", func() bool { return !c.stores[0].MetaStatus().Replica })
	// Its copy of the metadata leaves its disk in a disk operation after the drop.
	waitFor(t, "member 0 to drop its copy of the metadata", func() bool { e := c.local(0, "old"); return e.absent() })
	if err := c.stores[0].Write(ctx, Write{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if e := c.local(0, "k"); !e.absent() {
		t.Errorf("a member outside the set holds a write: %+v", e)
	}
	if e := c.local(1, "k"); string(e.rec.Value) != "v" {
		t.Errorf("the set does not hold the write: %+v", e)
	}
	if got, found, err := c.stores[0].Get(ctx, "k"); err != nil || !found || string(got.Value) != "v" {
		t.Errorf("read from outside the set: %+v %v %v", got, found, err)
	}
}

// TestIndexRebuilt: a summary index that lost entries (a crash in a split commit) is
// rebuilt when the store opens.
func TestIndexRebuilt(t *testing.T) {
	c := newCluster(t, 1, nil)
	ctx := testContext(t)
	var ws []Write
	for i := range 100 {
		ws = append(ws, Write{Key: fmt.Sprintf("k%d", i), Value: []byte("v")})
	}
	if err := c.stores[0].Write(ctx, ws...); err != nil {
		t.Fatal(err)
	}
	want := *c.stores[0].digestSnapshot()
	c.closeStore(0)
	db, err := openBadger(c.dirs[0], c.log, nil, NoMinFreeSpace)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DropPrefix(indexKey("k7")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := c.open(0)
	// The index read back is the digest of the records: the one before closing, or — the
	// metadata group may store records of its own once it runs again (its configuration)
	// — the store's digest of now, once nothing changes it between the two reads.
	index := func() (digest, error) {
		var got digest
		var none entry
		err := scanStored(s.db, []byte(indexPrefix), len(indexPrefix)+2, false, func(e *entry) error {
			got.update(e.rec.Key, &none, e)
			return nil
		})
		return got, err
	}
	var got digest
	waitFor(t, "the index to match the records", func() bool {
		before := *s.digestSnapshot()
		got, err = index()
		return err == nil && (got == want || got == before && before == *s.digestSnapshot())
	})
	if err != nil {
		t.Errorf("index after reopening: %v", err)
	}
}

// TestMetadataOnTheVoters: the metadata — the split-brain resolver's lease among it — takes
// a majority of the voters (the members whose majority grants the serving lease), whatever
// the cluster's size: with 7 members, 3 of them voters, and 4 stores closed (one voter among
// them) the lease's key is written, read with a fence and the fence holds; a member that is
// no voter counts for nothing (its own replica holds nothing); with two voters closed
// nothing gets through.
func TestMetadataOnTheVoters(t *testing.T) {
	var place atomic.Pointer[Placement] // the first three voters, once the cluster is made
	c := newCluster(t, 7, func(cfg *Config) {
		cfg.Timeout = 500 * time.Millisecond
		cfg.Placement = place.Load
	})
	ms := make([]PlacedMember, len(c.members))
	for i, id := range c.members {
		ms[i] = PlacedMember{ID: id, Age: uint64(i + 1), Voter: i < 3}
	}
	place.Store(NewPlacement(ms, 0, 0, nil))
	if p := place.Load(); !slices.Equal(p.Meta(), c.members[:3]) {
		t.Fatalf("metadata on %v", p.Meta())
	}
	ctx := testContext(t)
	// A store takes the placement up with its next input: the oldest voter founds the
	// metadata group and adds the two others as they announce themselves.
	waitFor(t, "the first write", func() bool { return c.stores[0].Write(ctx, Write{Key: "warm", Value: []byte("up")}) == nil })
	for i := range c.stores[:3] {
		waitFor(t, fmt.Sprintf("voter %d to hold the metadata", i), func() bool { e := c.local(i, "warm"); return !e.absent() })
	}
	for _, i := range []int{2, 4, 5, 6} {
		c.closeStore(i)
	}
	const lease = "ls\x00sbr"
	if err := c.stores[3].Write(ctx, Write{Key: lease, Value: []byte("a"), Epoch: 5}); err != nil {
		t.Fatalf("write of the lease from a member that is no voter, 2 of 3 voters up: %v", err)
	}
	if e := c.local(3, lease); !e.absent() {
		t.Errorf("a member that is no voter holds the lease: %+v", e)
	}
	rec, found, err := c.stores[1].GetFenced(ctx, lease, 9)
	if err != nil || !found || string(rec.Value) != "a" {
		t.Fatalf("fenced read of the lease: %+v %v %v", rec, found, err)
	}
	if err := c.stores[3].Write(ctx, Write{Key: lease, Value: []byte("b"), Epoch: 8}); !errors.Is(err, ErrFenced) {
		t.Errorf("write below the fence: %v", err)
	}
	c.closeStore(1)
	var me *MetaError
	if err := c.stores[3].Write(ctx, Write{Key: lease, Value: []byte("c"), Epoch: 10}); !errors.As(err, &me) || !errors.Is(err, ErrNoQuorum) {
		t.Errorf("write of the lease with 1 of 3 voters up: %v", err)
	}
}
