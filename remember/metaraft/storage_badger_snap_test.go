package metaraft

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// logOf returns n entries from index at, of term.
func logOf(at, n, term uint64) []*pb.Entry {
	ents := make([]*pb.Entry, n)
	for j := range ents {
		ents[j] = &pb.Entry{Index: new(at + uint64(j)), Term: new(term), Data: []byte(fmt.Sprintf("entry %d", at+uint64(j)))}
	}
	return ents
}

// storageState is every read of a storage: the hard state, the ConfState, the snapshot,
// the log's bounds and its entries.
func storageState(t testing.TB, s Storage) []any {
	t.Helper()
	hs, cs, err := s.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	var ents []*pb.Entry
	if last >= first {
		if ents, err = s.Entries(first, last+1, 1<<62); err != nil {
			t.Fatal(err)
		}
	}
	if hs == nil {
		return []any{"no hard state", cs, snap, first, last, ents}
	}
	return []any{hs, cs, snap, first, last, ents}
}

func sameState(a, b []any) bool {
	for i := range a {
		if !sameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// checkChunks checks that the chunks under s's prefix are exactly its snapshot's.
func checkChunkKeys(t testing.TB, s *BadgerStorage) {
	t.Helper()
	keys := keysUnder(t, s.db, string(s.key(recChunk)))
	if len(keys) != int(s.snap.chunks) {
		t.Fatalf("%d chunks stored, want the snapshot's %d", len(keys), s.snap.chunks)
	}
	for i, k := range keys {
		if !bytes.Equal([]byte(k), s.chunkKey(s.snap.gen, uint32(i))) {
			t.Fatalf("chunk key %q, want %q (chunk %d of generation %d)", k, s.chunkKey(s.snap.gen, uint32(i)), i, s.snap.gen)
		}
	}
}

// TestBadgerStorageLargeSnapshots creates snapshots from nothing to 64 MiB (a chunk, at
// and around the chunk size, the 1.09 MB that Badger refused as one value, 8 MiB, 64
// MiB), and a follower stores a received 64 MiB snapshot with entries and a hard state
// in one Save, on an on-disk Badger with the store's options (a transaction holds at most
// 1.2 MiB) and on an in-memory one (a value holds at most 1 MiB); then the DB is closed
// and opened again: each reads back the snapshot it stored, and only its chunks are left.
func TestBadgerStorageLargeSnapshots(t *testing.T) {
	skipUnderRaceDetector(t)
	rng := rand.New(rand.NewPCG(7, 7))
	big := randomBytes(rng, 64<<20)
	for _, onDisk := range []bool{true, false} {
		t.Run(fmt.Sprintf("onDisk=%v", onDisk), func(t *testing.T) {
			dir := t.TempDir()
			open := func() *badger.DB {
				opt := storeOptions(dir)
				if !onDisk {
					opt = badger.DefaultOptions("").WithInMemory(true).WithLogger(nil).WithMemTableSize(8 << 20)
				}
				db, err := badger.Open(opt)
				if err != nil {
					t.Fatal(err)
				}
				return db
			}
			db := open()
			leader, err := OpenBadgerStorage(db, "leader\x00")
			if err != nil {
				t.Fatal(err)
			}
			if err := leader.Save(&pb.HardState{Term: new(uint64(1)), Commit: new(uint64(20))}, logOf(1, 20, 1), nil); err != nil {
				t.Fatal(err)
			}
			c := leader.chunk
			if c != maxChunk {
				t.Fatalf("chunks of %d bytes, want %d", c, maxChunk)
			}
			i := uint64(0)
			for _, n := range []int{-1, 0, 1, c - 1, c, c + 1, 1_091_407, 8<<20 + 3, 64 << 20} {
				var data []byte
				if n >= 0 {
					data = big[:n:n]
				}
				i++
				made, err := leader.CreateSnapshot(i, &pb.ConfState{Voters: []uint64{1, 2, 3}}, data)
				if err != nil {
					t.Fatalf("CreateSnapshot of %d bytes: %v", n, err)
				}
				got, err := leader.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.GetData(), data) || (got.GetData() == nil) != (data == nil) || !bytes.Equal(made.GetData(), data) || got.GetMetadata().GetIndex() != i {
					t.Fatalf("snapshot at %d of %d bytes: read back %d bytes at %d", i, n, len(got.GetData()), got.GetMetadata().GetIndex())
				}
				checkChunkKeys(t, leader)
			}
			want := storageState(t, leader)

			follower, err := OpenBadgerStorage(db, "follower\x00")
			if err != nil {
				t.Fatal(err)
			}
			if err := follower.Save(nil, logOf(1, 5, 1), nil); err != nil {
				t.Fatal(err)
			}
			snap := &pb.Snapshot{Data: big, Metadata: &pb.SnapshotMetadata{Index: new(uint64(30)), Term: new(uint64(2)), ConfState: &pb.ConfState{Voters: []uint64{1, 2}}}}
			if err := follower.Save(&pb.HardState{Term: new(uint64(2)), Commit: new(uint64(32))}, logOf(31, 2, 2), snap); err != nil {
				t.Fatalf("Save of a Ready with a 64 MiB snapshot: %v", err)
			}
			wantF := storageState(t, follower)
			if first, last := wantF[3], wantF[4]; first != uint64(31) || last != uint64(32) {
				t.Fatalf("the follower's log holds %v..%v, want 31..32", first, last)
			}
			if !onDisk {
				return
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = open()
			defer db.Close()
			for _, tc := range []struct {
				prefix string
				want   []any
			}{{"leader\x00", want}, {"follower\x00", wantF}} {
				s, err := OpenBadgerStorage(db, tc.prefix)
				if err != nil {
					t.Fatal(err)
				}
				if !sameState(storageState(t, s), tc.want) {
					t.Fatalf("%q reopened: its state differs", tc.prefix)
				}
				checkChunkKeys(t, s)
			}
		})
	}
}

var errCrash = errors.New("crash")

// crashAfter runs write on s and kills it (a panic out of the storage, which stops it as
// a crash would: nothing more is written) once k transactions committed (k 0: never). It
// reports whether it killed it.
func crashAfter(s *BadgerStorage, k int, write func() error) (killed bool, err error) {
	n := 0
	s.afterCommit = func() {
		if n++; n == k {
			panic(errCrash)
		}
	}
	defer func() {
		s.afterCommit = nil
		if r := recover(); r != nil {
			if r != errCrash {
				panic(r)
			}
			killed = true
		}
	}()
	return false, write()
}

// crashDB opens an in-memory Badger with 1 MiB memtables: a transaction holds ~150 KiB,
// so a snapshot of a few hundred KiB takes several.
func crashDB(t testing.TB) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil).WithMemTableSize(1 << 20).WithValueThreshold(64 << 10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestBadgerStorageSnapshotCrash kills a snapshot's write (CreateSnapshot, and Save of a
// Ready with a snapshot, entries and a hard state) after each of its transactions in
// turn — after each chunk transaction, between the last one and the record's, after the
// record's, after each deletion of older chunks the record's transaction had no room for
// (an old snapshot of 4,389 chunks of 7 bytes) — then opens the storage again: it holds
// the old state or the new one whole (the new one from the record's commit on), and no
// chunk but its snapshot's. A storage whose write was killed before the record carries
// on: its next snapshot does not reuse the killed one's generation.
func TestBadgerStorageSnapshotCrash(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	next := randomBytes(rng, 700<<10)
	createSnapshot := func(s *BadgerStorage) error {
		_, err := s.CreateSnapshot(8, &pb.ConfState{Voters: []uint64{1, 2, 3}}, next)
		return err
	}
	for _, tc := range []struct {
		name     string
		old      []byte
		oldChunk int // the old snapshot's chunk size (0: chunkSize's)
		write    func(s *BadgerStorage) error
	}{
		{"CreateSnapshot", randomBytes(rng, 300<<10), 0, createSnapshot},
		{"Save", randomBytes(rng, 300<<10), 0, func(s *BadgerStorage) error {
			snap := &pb.Snapshot{Data: next, Metadata: &pb.SnapshotMetadata{Index: new(uint64(12)), Term: new(uint64(2)), ConfState: &pb.ConfState{Voters: []uint64{1, 2}}}}
			return s.Save(&pb.HardState{Term: new(uint64(2)), Commit: new(uint64(14))}, logOf(13, 3, 2), snap)
		}},
		{"CreateSnapshot over many chunks", randomBytes(rng, 30<<10), 7, createSnapshot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := crashDB(t)
			setup := func(prefix string) *BadgerStorage {
				s, err := OpenBadgerStorage(db, prefix)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Save(&pb.HardState{Term: new(uint64(1)), Commit: new(uint64(6))}, logOf(1, 10, 1), nil); err != nil {
					t.Fatal(err)
				}
				if tc.oldChunk > 0 {
					s.chunk = tc.oldChunk
				}
				if _, err := s.CreateSnapshot(5, &pb.ConfState{Voters: []uint64{1}}, tc.old); err != nil {
					t.Fatal(err)
				}
				s.chunk = chunkSize(db)
				return s
			}
			// A run without a crash: the states before and after, how many transactions
			// the write commits, and which of them commits the record.
			s := setup("whole\x00")
			before := storageState(t, s)
			commits, recordAt := 0, 0
			s.afterCommit = func() {
				commits++
				if err := db.View(func(txn *badger.Txn) error {
					b, _, err := s.value(txn, s.key(recSnapshot))
					if r, _ := decodeSnapRecord(b); r.gen == s.snap.gen+1 && recordAt == 0 {
						recordAt = commits
					}
					return err
				}); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.write(s); err != nil {
				t.Fatal(err)
			}
			after := storageState(t, s)
			if recordAt < 3 || commits < recordAt || (commits > recordAt) != (tc.oldChunk > 0) {
				t.Fatalf("the write committed %d transactions, the record in the %d-th: want chunks in several before it, deletions after only of an old snapshot of many chunks", commits, recordAt)
			}
			t.Logf("%d transactions: %d of chunks, the record's (with more chunks), %d deleting old chunks", commits, recordAt-1, commits-recordAt)
			for k := 1; k <= commits; k++ {
				prefix := fmt.Sprintf("k%d\x00", k)
				s := setup(prefix)
				if killed, err := crashAfter(s, k, func() error { return tc.write(s) }); !killed {
					t.Fatalf("k=%d: not killed (%v)", k, err)
				}
				if k < recordAt {
					// Killed before the record: the storage carries on (as after a
					// failed write) with a smaller snapshot.
					if _, err := s.CreateSnapshot(6, nil, tc.old[:1000]); err != nil {
						t.Fatalf("k=%d: carry on: %v", k, err)
					}
					checkChunkKeys(t, s)
				}
				again, err := OpenBadgerStorage(db, prefix)
				if err != nil {
					t.Fatalf("killed after %d transactions: open: %v", k, err)
				}
				got := storageState(t, again)
				switch {
				case k < recordAt && got[2].(*pb.Snapshot).GetMetadata().GetIndex() == 6:
				case k < recordAt && !sameState(got, before):
					t.Fatalf("killed after %d transactions (the record commits in the %d-th): not the old state", k, recordAt)
				case k >= recordAt && !sameState(got, after):
					t.Fatalf("killed after %d transactions (the record commits in the %d-th): not the new state", k, recordAt)
				}
				checkChunkKeys(t, again)
			}
		})
	}
}

// TestBadgerStorageResetCrash kills a Reset of a large state (a snapshot of 300 KiB,
// 3,000 entries) after each of its transactions in turn: opened again, the storage is
// empty, with the new id, and holds no key but the id and the log's bounds. A storage
// whose Reset was killed while deleting carries on: its next write finishes the Reset
// first, so the entries it writes stay.
func TestBadgerStorageResetCrash(t *testing.T) {
	db := crashDB(t)
	data := randomBytes(rand.New(rand.NewPCG(4, 4)), 300<<10)
	setup := func(prefix string) *BadgerStorage {
		s, err := OpenBadgerStorage(db, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for at := uint64(1); at <= 3000; at += 500 {
			if err := s.Save(&pb.HardState{Term: new(uint64(1)), Commit: new(at)}, logOf(at, 500, 1), nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateSnapshot(5, &pb.ConfState{Voters: []uint64{1}}, data); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := setup("whole\x00")
	commits := 0
	s.afterCommit = func() { commits++ }
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	empty := storageState(t, s)
	if commits < 3 {
		t.Fatalf("Reset committed %d transactions, want several", commits)
	}
	t.Logf("Reset: %d transactions", commits)
	for k := 1; k <= commits; k++ {
		prefix := fmt.Sprintf("k%d\x00", k)
		s := setup(prefix)
		s0, _ := s.ID()
		if killed, err := crashAfter(s, k, s.Reset); !killed {
			t.Fatalf("k=%d: not killed (%v)", k, err)
		}
		id, _ := s.ID()
		carryOn := k > 1 && k < commits
		if carryOn {
			// Killed while deleting (as if the deletions failed): the storage carries
			// on, and its next write finishes the Reset first.
			if err := s.Save(nil, logOf(1, 3, 1), nil); err != nil {
				t.Fatalf("k=%d: carry on: %v", k, err)
			}
		}
		again, err := OpenBadgerStorage(db, prefix)
		if err != nil {
			t.Fatalf("Reset killed after %d transactions: open: %v", k, err)
		}
		got := storageState(t, again)
		if carryOn {
			if got[4] != uint64(3) {
				t.Fatalf("Reset killed after %d transactions, then 3 entries written: the log ends at %v", k, got[4])
			}
		} else if !sameState(got, empty) {
			t.Fatalf("Reset killed after %d transactions: not empty", k)
		}
		if k == 1 {
			id = again.id // killed before the storage took the id it committed
		}
		if again.id != id || id == s0 {
			t.Fatalf("Reset killed after %d transactions: id %d, want the new %d", k, again.id, id)
		}
		want := 2 // the id and the log's bounds
		if carryOn {
			want += 3 // and the entries written after
		}
		if keys := keysUnder(t, db, prefix); len(keys) != want {
			t.Fatalf("Reset killed after %d transactions: %q holds %q, want %d keys", k, prefix, keys, want)
		}
	}
}

// TestBadgerStorageDamagedChunks damages a stored snapshot's chunks and record: a chunk
// missing, one past the last, a key that is no chunk's, or a record that contradicts
// itself fail the open; a chunk of the wrong length or data that does not match the
// checksum fail Snapshot (the member's start reads it): ErrDamaged, naming the key.
func TestBadgerStorageDamagedChunks(t *testing.T) {
	db := memDB(t)
	s := groupState(t, db, "")
	data := randomBytes(rand.New(rand.NewPCG(5, 5)), 3*maxChunk+100)
	if _, err := s.CreateSnapshot(5, nil, data); err != nil {
		t.Fatal(err)
	}
	gen := s.snap.gen
	rec, err := s.snap.encode()
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(data[maxChunk : 2*maxChunk])
	flipped[77] ^= 1
	for _, tc := range []struct {
		what   string
		key    []byte
		value  []byte // nil: delete
		atOpen bool   // else at Snapshot
		named  []byte // the key the error names (nil: key)
	}{
		{"snapshot chunk 1 of generation", s.chunkKey(gen, 1), nil, true, nil},
		{"snapshot chunk 3 of generation", s.chunkKey(gen, 3), nil, true, nil},
		{"snapshot chunk 4 of generation", s.chunkKey(gen, 4), []byte("x"), true, nil},
		{"a record", append(s.key(recChunk), 1, 2, 3), []byte("x"), true, nil},
		{"the snapshot", s.key(recSnapshot), rec[:snapRecordHeader-1], true, nil},
		{"the snapshot", s.key(recSnapshot), append(append(bytes.Clone(rec[:14]), 0, 0, 0, 9), rec[18:]...), true, nil},        // 9 chunks
		{"the snapshot", s.key(recSnapshot), append(append(bytes.Clone(rec[:2]), make([]byte, 8)...), rec[10:]...), true, nil}, // generation 0
		{"snapshot chunk 2 of generation", s.chunkKey(gen, 2), data[2*maxChunk : 3*maxChunk-1], false, nil},
		{"the snapshot", s.chunkKey(gen, 1), flipped, false, s.key(recSnapshot)}, // the checksum
	} {
		named := tc.named
		if named == nil {
			named = tc.key
		}
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
		st, err := OpenBadgerStorage(db, "")
		if err == nil && !tc.atOpen {
			_, err = st.Snapshot()
		} else if err == nil || !tc.atOpen {
			t.Errorf("%s (key %q) = %d bytes: the open: %v, want it to fail only if damage shows without reading the chunks (%v)", tc.what, tc.key, len(tc.value), err, tc.atOpen)
		}
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), fmt.Sprintf("%q", named)) {
			t.Errorf("%s (key %q) = %d bytes: %v, want ErrDamaged naming %s (key %q)", tc.what, tc.key, len(tc.value), err, tc.what, named)
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
		st, err = OpenBadgerStorage(db, "")
		if err != nil {
			t.Fatalf("mended: %v", err)
		}
		if got, err := st.Snapshot(); err != nil || !bytes.Equal(got.GetData(), data) {
			t.Fatalf("mended: %d bytes, %v", len(got.GetData()), err)
		}
	}
}

// FuzzBadgerSnapshotRecord puts any value in place of a stored snapshot's record or of
// one of its chunks: the open fails with ErrDamaged naming a key, or Snapshot does, or
// it returns data of the length the record says.
func FuzzBadgerSnapshotRecord(f *testing.F) {
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil).WithMemTableSize(8 << 20))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = db.Close() })
	s := groupState(f, db, "")
	s.chunk = 16
	if _, err := s.CreateSnapshot(5, nil, []byte("the applied state of the group, in three chunks")); err != nil {
		f.Fatal(err)
	}
	keys := [][]byte{s.key(recSnapshot), s.chunkKey(s.snap.gen, 0), s.chunkKey(s.snap.gen, 1), s.chunkKey(s.snap.gen, 2)}
	base := map[string][]byte{}
	for _, k := range keys {
		err := db.View(func(txn *badger.Txn) error {
			v, _, err := s.value(txn, k)
			base[string(k)] = v
			return err
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	for i, k := range keys {
		f.Add(uint8(i), base[string(k)])
	}
	f.Fuzz(func(t *testing.T, which uint8, value []byte) {
		key := keys[int(which)%len(keys)]
		err := db.Update(func(txn *badger.Txn) error {
			for k, v := range base {
				if err := txn.Set([]byte(k), v); err != nil {
					return err
				}
			}
			return txn.Set(key, value)
		})
		if err != nil {
			t.Fatal(err)
		}
		st, err := OpenBadgerStorage(db, "")
		var snap *pb.Snapshot
		if err == nil {
			snap, err = st.Snapshot()
		}
		if err != nil {
			if !errors.Is(err, ErrDamaged) || !bytes.Contains([]byte(err.Error()), []byte(`(key "mr\x00`)) {
				t.Fatalf("%q = %x: %v, want ErrDamaged naming a key", key, value, err)
			}
			return
		}
		if uint64(len(snap.GetData())) != st.snap.size {
			t.Fatalf("%q = %x: %d bytes read, the record says %d", key, value, len(snap.GetData()), st.snap.size)
		}
		_ = proto.Size(snap)
	})
}
