package remember

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// benchValue is the value of every benchmark write: about a remembered entity or a small
// entity state.
var benchValue = make([]byte, 64)

// BenchmarkReplicatedWrites: 3 members in this process on loopback (one disk, 2 cores in
// CI), writers goroutines spread over them, each writing one new key per Write call with
// the reference.conf quorum (all three replicas store it, each with an fsync). writes/s is
// the figure; compare it with BenchmarkBadgerBatchedFsyncBaseline of the same run.
func BenchmarkReplicatedWrites(b *testing.B) {
	for _, writers := range []int{64, 1024} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchReplicatedWrites(b, writers) })
	}
}

func benchReplicatedWrites(b *testing.B, writers int) {
	testLogLevel = slog.LevelError
	c := newCluster(b, 3, func(cfg *Config) { cfg.AntiEntropyInterval = time.Second })
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := c.stores[w%3]
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := s.Write(ctx, Write{Key: fmt.Sprintf("bench/%d/%d", w, i), Value: benchValue}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	var writes, rounds, commits uint64
	var busy time.Duration
	for _, s := range c.stores {
		st := s.Stats()
		writes, rounds, commits = writes+st.Writes, rounds+st.WriteRounds, commits+st.Commits
		busy += st.CommitTime
	}
	if rounds > 0 && commits > 0 {
		b.ReportMetric(float64(writes)/float64(rounds), "writes/round")
		b.ReportMetric(float64(writes)*3/float64(commits), "keys/commit")
		b.ReportMetric(float64(busy.Microseconds())/float64(commits), "µs/commit")
	}
}

// BenchmarkBadgerBatchedFsyncBaseline: the raw rate of one Badger database with the
// store's options (small memtables, SyncWrites) taking the same keys and values through
// WriteBatch in batches of 1,000 (one fsync each): what one member's disk path can do at
// best, with the whole machine to itself.
func BenchmarkBadgerBatchedFsyncBaseline(b *testing.B) { benchBadgerBatched(b, 1) }

// BenchmarkBadgerBatchedFsyncThreeReplicas: the same with every key written to three
// databases at once (three goroutines): the floor of what three replicas on this one
// machine cost, before any network, reads or bookkeeping.
func BenchmarkBadgerBatchedFsyncThreeReplicas(b *testing.B) { benchBadgerBatched(b, 3) }

func benchBadgerBatched(b *testing.B, replicas int) {
	dbs := make([]*badger.DB, replicas)
	for i := range dbs {
		db, err := badger.Open(badgerOptions(filepath.Join(b.TempDir(), fmt.Sprint("raw", i)), slog.New(slog.DiscardHandler), nil))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < b.N; {
				wb := db.NewWriteBatch()
				for j := 0; j < 1000 && i < b.N; j, i = j+1, i+1 {
					if err := wb.Set(fmt.Appendf(nil, "rbench/%d", i), benchValue); err != nil {
						b.Error(err)
						return
					}
				}
				if err := wb.Flush(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "keys/s")
}

// BenchmarkWriteLatency: one writer, one key per Write, 3 members with the reference.conf
// quorum: the latency of an unbatched replicated write (p50 and p99).
func BenchmarkWriteLatency(b *testing.B) {
	testLogLevel = slog.LevelError
	c := newCluster(b, 3, func(cfg *Config) { cfg.AntiEntropyInterval = time.Second })
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if err := c.stores[0].Write(ctx, Write{Key: fmt.Sprintf("lat/%d", i), Value: benchValue}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, lat, "")
}

// BenchmarkBadgerSyncWriteBaseline: one key per synchronous Badger transaction, the raw
// latency under BenchmarkWriteLatency.
func BenchmarkBadgerSyncWriteBaseline(b *testing.B) {
	db, err := badger.Open(badgerOptions(filepath.Join(b.TempDir(), "raw"), slog.New(slog.DiscardHandler), nil))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		err := db.Update(func(txn *badger.Txn) error { return txn.Set(fmt.Appendf(nil, "lat/%d", i), benchValue) })
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, lat, "raw-")
}

func reportPercentiles(b *testing.B, lat []time.Duration, prefix string) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), prefix+"p50-µs")
	b.ReportMetric(at(0.99), prefix+"p99-µs")
}
