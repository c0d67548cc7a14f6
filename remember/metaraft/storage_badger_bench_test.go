package metaraft

import (
	"bytes"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// storeOptions are the store's Badger options (remember/config.go: synchronous writes,
// 8 MiB memtables, 16 MiB value log files) for a Badger in dir.
func storeOptions(dir string) badger.Options {
	return badger.DefaultOptions(dir).WithSyncWrites(true).WithMemTableSize(8 << 20).WithNumMemtables(2).
		WithNumLevelZeroTables(2).WithNumLevelZeroTablesStall(8).WithValueLogFileSize(16 << 20).WithBlockCacheSize(8 << 20).
		WithNumCompactors(2).WithDetectConflicts(false).WithMetricsEnabled(false).WithLogger(nil)
}

// diskDB opens a Badger in a temporary directory with the store's options.
func diskDB(t testing.TB) *badger.DB {
	t.Helper()
	db, err := badger.Open(storeOptions(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// benchEntry is entry i of a metadata write of ~200 bytes.
func benchEntry(i uint64) *pb.Entry {
	p := proposal{by: "m1#1700000000000000000", seq: i, data: encodeKV("coord/directives/region-17", bytes.Repeat([]byte{'v'}, 140))}
	return &pb.Entry{Index: new(i), Term: new(uint64(3)), Type: pb.EntryNormal.Enum(), Data: p.encode()}
}

// BenchmarkBadgerSave measures one Save of a Ready holding one ~200-byte entry and a
// HardState, on an on-disk Badger with synchronous writes, against the same bytes (the
// entry, the HardState and the log's bounds, three keys) written without raft in one
// synchronous Badger transaction. The two alternate, so they see the same disk; ns/op is
// the pair, save-ns and raw-ns each, ratio save/raw.
func BenchmarkBadgerSave(b *testing.B) {
	db := diskDB(b)
	st, err := OpenBadgerStorage(db, "")
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte("raw\x00")
	rawKey := func(k []byte) []byte { return append(bytes.Clone(raw), k[len(BadgerPrefix):]...) }
	e0 := benchEntry(1)
	size := proto.Size(e0)
	var save, direct time.Duration
	b.ResetTimer()
	for i := uint64(1); i <= uint64(b.N); i++ {
		e := benchEntry(i)
		hs := &pb.HardState{Term: new(uint64(3)), Vote: new(uint64(7)), Commit: new(i - 1)}
		start := time.Now()
		if err := st.Save(hs, []*pb.Entry{e}, nil); err != nil {
			b.Fatal(err)
		}
		save += time.Since(start)

		start = time.Now()
		eb, _ := proto.Marshal(e)
		hb, _ := proto.Marshal(hs)
		txn := db.NewTransaction(true)
		for _, kv := range [][2][]byte{{rawKey(st.entryKey(i)), eb}, {rawKey(st.key(recHardState)), hb}, {rawKey(st.key(recLog)), logState{last: i}.encode()}} {
			if err := txn.Set(kv[0], kv[1]); err != nil {
				b.Fatal(err)
			}
		}
		if err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
		direct += time.Since(start)
	}
	b.ReportMetric(float64(save.Nanoseconds())/float64(b.N), "save-ns")
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "raw-ns")
	b.ReportMetric(float64(save)/float64(direct), "ratio")
	b.ReportMetric(float64(size), "entry-bytes")
}

// BenchmarkBadgerRead measures what raft reads back after a Save: the entries just stored
// (Entries, to apply them) and terms (Term, to match the next append: the last entry's,
// kept in memory, or an older one), from BadgerStorage and, for comparison, MemStorage:
// whether a cache of recent entries would earn its place.
func BenchmarkBadgerRead(b *testing.B) {
	db := diskDB(b)
	bs, err := OpenBadgerStorage(db, "")
	if err != nil {
		b.Fatal(err)
	}
	ms := NewMemStorage()
	const n = 1000
	for i := uint64(1); i <= n; i++ {
		for _, st := range []Storage{bs, ms} {
			if err := st.Save(nil, []*pb.Entry{benchEntry(i)}, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		st   Storage
	}{{"badger", bs}, {"memory", ms}} {
		b.Run("entries/"+tc.name, func(b *testing.B) {
			for i := range b.N {
				if _, err := tc.st.Entries(n-uint64(i%8), n+1, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("term-last/"+tc.name, func(b *testing.B) { // ~97% of raft's Term calls in TestMetaRaftCost's writes
			for range b.N {
				if _, err := tc.st.Term(n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("term-older/"+tc.name, func(b *testing.B) {
			for i := range b.N {
				if _, err := tc.st.Term(n - 1 - uint64(i%8)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
