package metaraft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

var storageSeeds = flag.Int("metaraft.storageseeds", 300, "seeds of TestBadgerStorageConformance")

// memDB opens an in-memory Badger (closed when the test ends).
func memDB(t testing.TB) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil).WithMemTableSize(8 << 20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// outcome is a call's result as the conformance test compares it: an error's kind (a
// panic of raft.MemoryStorage on a call out of bounds counts as an error of kind "other",
// which BadgerStorage must return instead), or what it returned.
type outcome struct {
	kind string
	vals []any
}

func errKind(err error) string {
	for _, e := range []error{raft.ErrCompacted, raft.ErrUnavailable, raft.ErrSnapOutOfDate} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "other"
	}
	return ""
}

// outcomeOf runs f, taking a panic for an error of kind "other".
func outcomeOf(f func() ([]any, error)) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = outcome{kind: "other", vals: []any{fmt.Sprint(r)}}
		}
	}()
	vals, err := f()
	if err != nil {
		return outcome{kind: errKind(err), vals: []any{err.Error()}}
	}
	return outcome{vals: vals}
}

func sameOutcome(a, b outcome) bool {
	if a.kind != b.kind {
		return false
	}
	if a.kind != "" {
		return true // the messages differ
	}
	if len(a.vals) != len(b.vals) {
		return false
	}
	for i := range a.vals {
		if !sameValue(a.vals[i], b.vals[i]) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case proto.Message:
		bm, ok := b.(proto.Message)
		return ok && proto.Equal(a, bm)
	case []*pb.Entry:
		be, ok := b.([]*pb.Entry)
		if !ok || len(a) != len(be) {
			return false
		}
		for i := range a {
			if !proto.Equal(a[i], be[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// conformance runs the same operations on a MemStorage and a BadgerStorage and fails on
// the first answer that differs.
type conformance struct {
	t      *testing.T
	rng    *rand.Rand
	db     *badger.DB
	prefix string
	mem    *MemStorage
	bad    *BadgerStorage
	op     string // the operation, for failures
	term   uint64 // the highest term handed out so far
	stats  *conformanceStats
}

// conformanceStats counts the snapshots' data handed out.
type conformanceStats struct {
	data, chunked, overMiB int // in all, of two chunks or more, over 1 MiB
	largest                int
}

func (st *conformanceStats) add(data []byte, chunk int) []byte {
	st.data++
	if len(data) > chunk {
		st.chunked++
	}
	if len(data) > 1<<20 {
		st.overMiB++
	}
	st.largest = max(st.largest, len(data))
	return data
}

func (c *conformance) both(what string, f func(Storage) ([]any, error)) {
	c.t.Helper()
	m := outcomeOf(func() ([]any, error) { return f(c.mem) })
	b := outcomeOf(func() ([]any, error) { return f(c.bad) })
	if !sameOutcome(m, b) {
		c.t.Fatalf("after %s: %s: MemStorage %+v, BadgerStorage %+v", c.op, what, m, b)
	}
}

// compare checks every read of the two storages.
func (c *conformance) compare() {
	c.t.Helper()
	c.both("FirstIndex", func(s Storage) ([]any, error) { i, err := s.FirstIndex(); return []any{i}, err })
	c.both("LastIndex", func(s Storage) ([]any, error) { i, err := s.LastIndex(); return []any{i}, err })
	c.both("InitialState", func(s Storage) ([]any, error) {
		hs, cs, err := s.InitialState()
		if hs == nil {
			return []any{"no hard state", cs}, err
		}
		return []any{hs, cs}, err
	})
	c.both("Snapshot", func(s Storage) ([]any, error) { snap, err := s.Snapshot(); return []any{snap}, err })
	first, _ := c.mem.FirstIndex()
	last, _ := c.mem.LastIndex()
	for i := first - min(first, 2); i <= last+2; i++ {
		c.both(fmt.Sprintf("Term(%d)", i), func(s Storage) ([]any, error) { t, err := s.Term(i); return []any{t}, err })
	}
	for range 6 {
		lo := first - min(first, 1) + c.rng.Uint64N(last-first+3)
		hi := lo + c.rng.Uint64N(last+3-min(lo, last+2))
		if c.rng.IntN(10) == 0 {
			hi = lo - min(lo, 1) // lo > hi
		}
		maxSize := []uint64{0, 1, 100, 400, 1000, 1 << 62}[c.rng.IntN(6)]
		c.both(fmt.Sprintf("Entries(%d, %d, %d)", lo, hi, maxSize), func(s Storage) ([]any, error) {
			ents, err := s.Entries(lo, hi, maxSize)
			return []any{ents}, err
		})
	}
}

func (c *conformance) entries(at uint64) []*pb.Entry {
	n := 1 + c.rng.IntN(6)
	if c.rng.IntN(3) == 0 {
		c.term += uint64(c.rng.IntN(2))
	}
	out := make([]*pb.Entry, n)
	for j := range out {
		data := make([]byte, c.rng.IntN(300))
		for k := range data {
			data[k] = byte(c.rng.Uint32())
		}
		typ := pb.EntryNormal
		if c.rng.IntN(8) == 0 {
			typ = pb.EntryConfChangeV2
		}
		out[j] = &pb.Entry{Term: new(c.term), Index: new(at + uint64(j)), Type: typ.Enum(), Data: data}
		if c.rng.IntN(10) == 0 {
			out[j].Data = nil
		}
	}
	return out
}

func (c *conformance) confState() *pb.ConfState {
	if c.rng.IntN(4) == 0 {
		return nil
	}
	cs := &pb.ConfState{}
	for i := range 1 + c.rng.IntN(5) {
		cs.Voters = append(cs.Voters, uint64(i+1)*7)
	}
	if c.rng.IntN(3) == 0 {
		cs.VotersOutgoing = []uint64{7, 99}
		cs.AutoLeave = new(true)
	}
	return cs
}

// data returns a snapshot's data: nil, a few bytes, several chunks of the storage's size
// (at, just under or just over a multiple of it), or now and then 0.25–1.25 MiB (in
// chunks of chunkSize's).
func (c *conformance) data() []byte {
	var data []byte
	switch r := c.rng.IntN(40); {
	case r < 8:
	case r < 14:
		k := 1 + c.rng.IntN(5)
		data = randomBytes(c.rng, max(k*c.bad.chunk+c.rng.IntN(3)-1, 0))
	case r == 14 && c.bad.chunk == chunkSize(c.db):
		data = randomBytes(c.rng, 256<<10+c.rng.IntN(1<<20))
	default:
		data = []byte(fmt.Sprintf("state %d", c.rng.Uint32()))
	}
	return c.stats.add(data, c.bad.chunk)
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n+7)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return b[:n:n]
}

func cloneEntries(ents []*pb.Entry) []*pb.Entry {
	out := make([]*pb.Entry, len(ents))
	for i, e := range ents {
		out[i] = proto.Clone(e).(*pb.Entry)
	}
	return out
}

// step runs one random operation on both storages.
func (c *conformance) step() {
	c.t.Helper()
	first, _ := c.mem.FirstIndex()
	last, _ := c.mem.LastIndex()
	snap, _ := c.mem.Snapshot()
	snapIdx := snap.GetMetadata().GetIndex()
	switch r := c.rng.IntN(100); {
	case r < 55: // Save
		var hs *pb.HardState
		var ents []*pb.Entry
		var sn *pb.Snapshot
		if c.rng.IntN(8) == 0 {
			c.term += uint64(c.rng.IntN(3))
			idx := snapIdx + c.rng.Uint64N(max(last, snapIdx)-snapIdx+6) - min(snapIdx, 1)
			sn = &pb.Snapshot{Data: c.data(), Metadata: &pb.SnapshotMetadata{Index: new(idx), Term: new(c.term), ConfState: c.confState()}}
			if c.rng.IntN(2) == 0 {
				ents = c.entries(idx + 1 - c.rng.Uint64N(min(idx, 2)+1))
			}
		} else if c.rng.IntN(10) < 8 {
			at := first - min(first, 3) + c.rng.Uint64N(last-first+5)
			if c.rng.IntN(15) == 0 {
				at = last + 2 // a gap: an error
			}
			ents = c.entries(max(at, 1))
		}
		if c.rng.IntN(2) == 0 {
			hs = &pb.HardState{Term: new(c.term), Vote: new(c.rng.Uint64N(4)), Commit: new(c.rng.Uint64N(last + 1))}
			if c.rng.IntN(10) == 0 {
				hs = &pb.HardState{} // empty: unchanged
			}
		}
		c.op = fmt.Sprintf("Save(%v, %d entries from %d, snapshot at %d)", hs, len(ents), index0(ents), sn.GetMetadata().GetIndex())
		c.both(c.op, func(s Storage) ([]any, error) {
			var snc *pb.Snapshot
			if sn != nil {
				snc = proto.Clone(sn).(*pb.Snapshot)
			}
			var hsc *pb.HardState
			if hs != nil {
				hsc = proto.Clone(hs).(*pb.HardState)
			}
			return nil, s.Save(hsc, cloneEntries(ents), snc)
		})
	case r < 70: // CreateSnapshot
		i := snapIdx - min(snapIdx, 1) + c.rng.Uint64N(max(last, snapIdx)-snapIdx+3)
		if i < first-1 {
			i = first - 1 // MemoryStorage panics on an index compacted past its snapshot
		}
		cs, data := c.confState(), c.data()
		c.op = fmt.Sprintf("CreateSnapshot(%d, %v)", i, cs)
		c.both(c.op, func(s Storage) ([]any, error) {
			var csc *pb.ConfState
			if cs != nil {
				csc = proto.Clone(cs).(*pb.ConfState)
			}
			snap, err := s.CreateSnapshot(i, csc, data)
			return []any{snap}, err
		})
	case r < 82: // Compact
		i := first - min(first, 2) + c.rng.Uint64N(last-first+4)
		c.op = fmt.Sprintf("Compact(%d)", i)
		c.both(c.op, func(s Storage) ([]any, error) { return nil, s.Compact(i) })
	case r < 89: // a restart
		c.op = "reopen"
		c.reopen()
	case r < 90: // the group removed the member
		c.op = "Reset"
		c.both(c.op, func(s Storage) ([]any, error) { return nil, s.Reset() })
	default: // the DB's other users write next to the storage
		c.op = "other keys"
		c.noise()
	}
	c.compare()
}

func index0(ents []*pb.Entry) uint64 {
	if len(ents) == 0 {
		return 0
	}
	return ents[0].GetIndex()
}

// reopen opens the storage again, which then writes chunks of one of a few sizes (from 7
// bytes to chunkSize's): it reads back the snapshot stored with any other. Half the time
// it saves in steps of 1 or 3 keys (saveInSteps), as it does a Ready too big for one
// transaction.
func (c *conformance) reopen() {
	c.t.Helper()
	b, err := OpenBadgerStorage(c.db, c.prefix)
	if err != nil {
		c.t.Fatalf("reopen: %v", err)
	}
	if r := c.rng.IntN(4); r > 0 {
		b.chunk = []int{7, 64, 1000}[r-1]
	}
	b.stepKeys = []int{0, 0, 1, 3}[c.rng.IntN(4)] // Saves in steps of 1 or 3 keys, for half the time
	c.bad = b
}

// noise writes keys next to the storage's prefix, which it must neither read nor change.
func (c *conformance) noise() {
	err := c.db.Update(func(txn *badger.Txn) error {
		for _, k := range noiseKeys(c.prefix) {
			if err := txn.Set(k, []byte(c.prefix)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

func noiseKeys(prefix string) [][]byte {
	p := []byte(prefix)
	before := append(bytes.Clone(p[:len(p)-1]), p[len(p)-1]-1, 'e', 0xff)
	after := append(bytes.Clone(p[:len(p)-1]), p[len(p)-1]+1, 'e', 0)
	return [][]byte{before, after, p[:len(p)-1], append(bytes.Clone(p[:len(p)-1]), 'h')}
}

// TestBadgerStorageConformance runs random operations (appends that overlap, truncate and
// skip compacted entries, snapshots applied and created, in order and out of date, of
// one to hundreds of chunks, compactions, hard states, restarts, resets, other users' keys
// around the prefix, calls out of bounds) on a MemStorage and a BadgerStorage, and
// compares every answer and, after each operation, every read. One Badger holds the
// storages of all seeds under prefixes of their own; each seed ends with a Reset, which
// leaves only the replica id and the empty log's bounds under its prefix.
func TestBadgerStorageConformance(t *testing.T) {
	raft.SetLogger(logger) // MemoryStorage panics through raft's logger on calls out of bounds
	t.Cleanup(raft.ResetDefaultLogger)
	db := memDB(t)
	seeds := *storageSeeds
	if testing.Short() {
		seeds = 50
	}
	if raceEnabled {
		seeds = 5
	}
	stats := &conformanceStats{}
	for seed := range uint64(seeds) {
		prefix := BadgerPrefix
		if seed > 0 {
			prefix = "mr" + strconv.FormatUint(seed, 10) + "\x00"
		}
		c := &conformance{t: t, rng: rand.New(rand.NewPCG(seed, 1)), db: db, prefix: prefix, mem: NewMemStorage(), term: 1, stats: stats}
		c.op = "open"
		c.reopen()
		c.compare()
		for range 300 {
			c.step()
		}
		c.op = "the last reopen"
		c.reopen()
		c.compare()
		c.op = "the last Reset"
		c.both(c.op, func(s Storage) ([]any, error) { return nil, s.Reset() })
		c.compare()
		if keys := keysUnder(t, db, prefix); len(keys) != 2 || keys[0] != prefix+"i" || keys[1] != prefix+"l" {
			t.Fatalf("seed %d: reset, %q holds %q, want the id and the log's bounds", seed, prefix, keys)
		}
		err := db.View(func(txn *badger.Txn) error {
			for _, k := range noiseKeys(prefix) {
				item, err := txn.Get(k)
				if errors.Is(err, badger.ErrKeyNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if v, _ := item.ValueCopy(nil); string(v) != prefix {
					return fmt.Errorf("key %q holds %q, want %q", k, v, prefix)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	t.Logf("%d seeds: %d snapshots' data, %d of several chunks, %d over 1 MiB, the largest %d bytes", seeds, stats.data, stats.chunked, stats.overMiB, stats.largest)
	if stats.chunked == 0 || stats.overMiB == 0 && seeds >= 50 {
		t.Fatal("no snapshot of several chunks, or none over 1 MiB")
	}
}

// groupState stores a small group's state under prefix in db: a snapshot at 3, entries
// 4..9, a hard state.
func groupState(t testing.TB, db *badger.DB, prefix string) *BadgerStorage {
	t.Helper()
	s, err := OpenBadgerStorage(db, prefix)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.ID()
	snap := &pb.Snapshot{Data: []byte(fmt.Sprintf(`{"data":"eyJhIjoiZGc9PSJ9","names":[{"name":"m1","id":%d}]}`, id)), Metadata: &pb.SnapshotMetadata{Index: new(uint64(3)), Term: new(uint64(2)),
		ConfState: &pb.ConfState{Voters: []uint64{id}}}}
	var ents []*pb.Entry
	for i := uint64(4); i <= 9; i++ {
		ents = append(ents, &pb.Entry{Index: new(i), Term: new(uint64(2)), Data: (&proposal{by: "m1#1", seq: i, data: encodeKV("k", []byte("v"))}).encode()})
	}
	if err := s.Save(&pb.HardState{Term: new(uint64(2)), Vote: new(id), Commit: new(uint64(9))}, ents, snap); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBadgerStorageDamaged damages each record of a stored group in turn: opening the
// storage fails with ErrDamaged and names the record and its key.
func TestBadgerStorageDamaged(t *testing.T) {
	db := memDB(t)
	s := groupState(t, db, "")
	garbage := []byte{0xff, 0xfe, 0x01}
	other, _ := proto.Marshal(&pb.Entry{Index: new(uint64(5)), Term: new(uint64(2))})
	for _, tc := range []struct {
		what  string
		key   []byte
		value []byte // nil: delete
	}{
		{"the hard state", s.key(recHardState), garbage},
		{"the log's bounds", s.key(recLog), garbage},
		{"the log's bounds", s.key(recLog), logState{index: 9, last: 3}.encode()},
		{"the snapshot", s.key(recSnapshot), garbage},
		{"log entry 6", s.entryKey(6), garbage},
		{"log entry 6", s.entryKey(6), other},
		{"log entry 6", s.entryKey(6), nil},
		{"log entry 10", s.entryKey(10), other},
		{"log entry 2", s.entryKey(2), other},
		{"a record", append(s.key(recEntry), 1, 2, 3), other},
	} {
		var old []byte
		err := db.Update(func(txn *badger.Txn) error {
			if item, err := txn.Get(tc.key); err == nil {
				old, _ = item.ValueCopy(nil)
			}
			if tc.value == nil {
				return txn.Delete(tc.key)
			}
			return txn.Set(tc.key, tc.value)
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = OpenBadgerStorage(db, "")
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.key)) {
			t.Errorf("%s (key %q) = %x: open: %v, want ErrDamaged naming it", tc.what, tc.key, tc.value, err)
		} else {
			t.Log(err)
		}
		err = db.Update(func(txn *badger.Txn) error {
			if old == nil {
				return txn.Delete(tc.key)
			}
			return txn.Set(tc.key, old)
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := OpenBadgerStorage(db, ""); err != nil {
			t.Fatalf("mended: %v", err)
		}
	}
}

// TestBadgerStorageOnDisk stores a group's state in an on-disk Badger, with the DB's
// synchronous writes and without them (the storage syncs after each commit), closes the
// DB, opens it again, and finds the same state.
func TestBadgerStorageOnDisk(t *testing.T) {
	for _, syncWrites := range []bool{true, false} {
		t.Run(fmt.Sprintf("SyncWrites=%v", syncWrites), func(t *testing.T) {
			dir := t.TempDir()
			open := func() *badger.DB {
				db, err := badger.Open(badger.DefaultOptions(dir).WithSyncWrites(syncWrites).WithLogger(nil).WithMemTableSize(8 << 20).WithValueLogFileSize(16 << 20))
				if err != nil {
					t.Fatal(err)
				}
				return db
			}
			db := open()
			s := groupState(t, db, "")
			if s.sync == syncWrites {
				t.Fatalf("SyncWrites %v, but the storage syncs: %v", syncWrites, s.sync)
			}
			ents := []*pb.Entry{{Index: new(uint64(8)), Term: new(uint64(3))}, {Index: new(uint64(9)), Term: new(uint64(3)), Data: []byte("x")}}
			if err := s.Save(&pb.HardState{Term: new(uint64(3)), Commit: new(uint64(8))}, ents, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.Compact(5); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateSnapshot(6, nil, []byte(`{"records":{}}`)); err != nil {
				t.Fatal(err)
			}
			read := func(s *BadgerStorage) []any {
				hs, cs, _ := s.InitialState()
				snap, _ := s.Snapshot()
				first, _ := s.FirstIndex()
				last, _ := s.LastIndex()
				ents, err := s.Entries(first, last+1, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				return []any{hs, cs, snap, first, last, ents}
			}
			before := read(s)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = open()
			defer db.Close()
			again, err := OpenBadgerStorage(db, "")
			if err != nil {
				t.Fatal(err)
			}
			after := read(again)
			for i := range before {
				if !sameValue(before[i], after[i]) {
					t.Fatalf("reopened, %v is %v, want %v", i, after[i], before[i])
				}
			}
			if before[3] != uint64(6) || before[4] != uint64(9) {
				t.Fatalf("the log holds %v..%v, want 6..9", before[3], before[4])
			}
		})
	}
}

// keysUnder lists the keys under prefix in db.
func keysUnder(t testing.TB, db *badger.DB, prefix string) []string {
	t.Helper()
	var keys []string
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, string(it.Item().Key()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
