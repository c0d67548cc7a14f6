package metaraft

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
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

// BenchmarkBadgerCreateSnapshot measures CreateSnapshot of 1, 8 and 32 MiB on an on-disk
// Badger with the store's options (synchronous writes), against the same bytes written
// with Badger alone in the same run, alternating: as a WriteBatch of values of the chunk
// size (Badger's bulk write: transactions as large as it takes, committed in a pipeline)
// and as synchronous transactions as large as Badger takes, one after the other (what the
// storage does). Each CreateSnapshot also deletes the previous snapshot's chunks; each raw
// write overwrites the previous one's keys. Each of the three goes first in turn. ns/op
// is the three writes and the two reads. Metrics: snap-ms, batch-ms, txns-ms, the ratios
// snap/batch and snap/txns, and read-ms (Snapshot, which reads the chunks back and checks
// them) against raw-read-ms (iterating the raw values).
func BenchmarkBadgerCreateSnapshot(b *testing.B) {
	for _, mib := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			db := diskDB(b)
			st, err := OpenBadgerStorage(db, "")
			if err != nil {
				b.Fatal(err)
			}
			data := randomBytes(rand.New(rand.NewPCG(1, uint64(mib))), mib<<20)
			chunks := make([][]byte, 0, len(data)/st.chunk+1)
			for off := 0; off < len(data); off += st.chunk {
				chunks = append(chunks, data[off:min(off+st.chunk, len(data))])
			}
			rawKey := func(what string, i int) []byte { return fmt.Appendf(nil, "raw\x00%s%08d", what, i) }
			var snap, batch, txns, read, rawRead time.Duration
			i := uint64(0)
			timed := func(d *time.Duration, f func() error) func() {
				return func() {
					start := time.Now()
					if err := f(); err != nil {
						b.Fatal(err)
					}
					*d += time.Since(start)
				}
			}
			writes := []func(){
				timed(&snap, func() error {
					_, err := st.CreateSnapshot(i, &pb.ConfState{Voters: []uint64{1, 2, 3}}, data)
					return err
				}),
				timed(&batch, func() error {
					wb := db.NewWriteBatch()
					defer wb.Cancel()
					for j, c := range chunks {
						if err := wb.Set(rawKey("b", j), c); err != nil {
							return err
						}
					}
					return wb.Flush()
				}),
				timed(&txns, func() error {
					txn := db.NewTransaction(true)
					defer func() { txn.Discard() }()
					for j, c := range chunks {
						err := txn.Set(rawKey("t", j), c)
						if errors.Is(err, badger.ErrTxnTooBig) {
							if err = txn.Commit(); err == nil {
								txn = db.NewTransaction(true)
								err = txn.Set(rawKey("t", j), c)
							}
						}
						if err != nil {
							return err
						}
					}
					return txn.Commit()
				}),
			}
			reads := []func(){
				timed(&read, func() error {
					got, err := st.Snapshot()
					if err == nil && len(got.GetData()) != len(data) {
						err = fmt.Errorf("%d bytes read back", len(got.GetData()))
					}
					return err
				}),
				timed(&rawRead, func() error {
					n := 0
					return db.View(func(txn *badger.Txn) error {
						it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("raw\x00t")})
						defer it.Close()
						for it.Rewind(); it.Valid(); it.Next() {
							if err := it.Item().Value(func(v []byte) error { n += len(v); return nil }); err != nil {
								return err
							}
						}
						if n != len(data) {
							return fmt.Errorf("%d raw bytes read", n)
						}
						return nil
					})
				}),
			}
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for k := range b.N {
				i++ // an entry to take the snapshot at, not timed
				if err := st.Save(nil, []*pb.Entry{benchEntry(i)}, nil); err != nil {
					b.Fatal(err)
				}
				for j := range writes { // each goes first in turn: the one after pays for the flushes the one before causes
					writes[(j+k)%len(writes)]()
				}
				for j := range reads {
					reads[(j+k)%len(reads)]()
				}
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(snap), "snap-ms")
			b.ReportMetric(ms(batch), "batch-ms")
			b.ReportMetric(ms(txns), "txns-ms")
			b.ReportMetric(float64(snap)/float64(batch), "snap/batch")
			b.ReportMetric(float64(snap)/float64(txns), "snap/txns")
			b.ReportMetric(ms(read), "read-ms")
			b.ReportMetric(ms(rawRead), "raw-read-ms")
		})
	}
}
