package shardmesh_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/internal/testlog"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
)

// durableStarts counts durable entity starts: incarnations that loaded their state.
type durableStarts struct{ started, failed atomic.Int64 }

// durableBenchType is a type with remember-entities on whose entities load their durable state
// when they start (as the daemon's counter does on its first message): a start is a
// remembered-entity write plus a state read, both through the replicated store.
func durableBenchType(c *durableStarts) shardmesh.Entity[[]byte, []byte] {
	return rememberedBenchType(c, true)
}

// rememberedBenchType is durableBenchType, or with load false a type that only remembers
// its entities (no state).
func rememberedBenchType(c *durableStarts, load bool) shardmesh.Entity[[]byte, []byte] {
	return shardmesh.Entity[[]byte, []byte]{
		Key: shardmesh.NewEntityTypeKey[[]byte, []byte]("durable"),
		New: func(ctx *shardmesh.Context) shardmesh.Behavior[[]byte, []byte] {
			var state []byte
			var err error
			if load {
				lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				state, err = ctx.LoadState(lctx)
				cancel()
			}
			if err != nil {
				c.failed.Add(1)
			} else {
				c.started.Add(1)
			}
			return shardmesh.BehaviorFunc[[]byte, []byte](func(*shardmesh.Context, []byte) ([]byte, error) { return state, nil })
		},
		MessageCodec:     bytesCodec{},
		ReplyCodec:       bytesCodec{},
		RememberEntities: true,
	}
}

// startDurableMember starts a one-member cluster on dir (reused across restarts) with
// shards shards and waits until it is Up.
func startDurableMember(tb testing.TB, dir string, shards int, opts ...shardmesh.Option) *shardmesh.System {
	tb.Helper()
	cfg := config.Default()
	cfg.Node.DataDir = dir
	cfg.Sharding.NumberOfShards = shards
	sys, err := shardmesh.Start(context.Background(), cfg, append([]shardmesh.Option{shardmesh.WithLogger(testlog.New(tb, slog.LevelWarn))}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := sys.Node().View()
		if len(v.Members) == 1 && v.Members[0].Status.String() == "Up" {
			return sys
		}
		if time.Now().After(deadline) {
			sys.Close()
			tb.Fatal("the member did not come Up")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startEntities asks n new entities (prefix0 … prefixN-1) once each, 256 at a time, and
// returns the rate at which they started (each ask returns after the entity was
// remembered and loaded its state).
func startEntities(tb testing.TB, r *shardmesh.Region[[]byte, []byte], prefix string, n int) float64 {
	tb.Helper()
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := r.EntityRefFor(prefix+strconv.FormatInt(i, 10)).Ask(ctx, []byte{1})
				cancel()
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		tb.Fatalf("starting %d entities: %v", n, err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// processCPU returns the CPU time (user and system) this process has used: per start, it
// says what a rate would cost on more cores, which the rate on two does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// badgerBatchedFsync is the raw baseline: keys of 64-byte values written to a fresh Badger
// database with the replicated store's options (small memtables, SyncWrites) through
// WriteBatch in batches of 1,000, each flushed with an fsync. It returns keys/s.
func badgerBatchedFsync(tb testing.TB, keys int) float64 {
	tb.Helper()
	opts := badger.DefaultOptions(filepath.Join(tb.TempDir(), "raw")).
		WithSyncWrites(true).
		WithMemTableSize(remember.DefaultMemTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithValueLogFileSize(remember.DefaultValueLogFileSize).
		WithBlockCacheSize(remember.DefaultBlockCacheSize).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithMetricsEnabled(false).
		WithDetectConflicts(false).
		WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 64)
	start := time.Now()
	for i := 0; i < keys; {
		wb := db.NewWriteBatch()
		for j := 0; j < 1000 && i < keys; j, i = j+1, i+1 {
			if err := wb.Set(fmt.Appendf(nil, "raw/%d", i), value); err != nil {
				tb.Fatal(err)
			}
		}
		if err := wb.Flush(); err != nil {
			tb.Fatal(err)
		}
	}
	return float64(keys) / time.Since(start).Seconds()
}

// BenchmarkDurableStarts: b.N new durable entities (remember-entities on, state loaded at
// start) on one member over its 30 shards, 256 asks in flight; next to Badger batched
// fsync in the same run (issue 4's target: ≥ 0.5× that rate). remember-only: the same
// without the state load, to tell the two store paths apart.
func BenchmarkDurableStarts(b *testing.B) {
	b.Run("remember+load", func(b *testing.B) { benchDurableStarts(b, true, 0) })
	b.Run("remember-only", func(b *testing.B) { benchDurableStarts(b, false, 0) })
	// The state load blocks one of the entity workers (2 × GOMAXPROCS) until its fenced
	// read round is on disk; with 64 workers 64 loads share each round.
	b.Run("remember+load/64-workers", func(b *testing.B) { benchDurableStarts(b, true, 64) })
	// Three members: each start's writes and its fenced read go to the shard's replica set
	// of three (a majority of two answers), its asks to the entity's home.
	b.Run("remember+load/3-members", benchDurableStarts3)
}

// benchDurableStarts3 is remember+load on a cluster of three members, asked through the
// first one (two thirds of the entities live elsewhere), rebalancing off.
func benchDurableStarts3(b *testing.B) {
	var c durableStarts
	systems := startMembersWith(b, 3, func(cfg *config.Config) { cfg.Sharding.RebalanceInterval = time.Hour })
	var r *shardmesh.Region[[]byte, []byte]
	for i, sys := range systems {
		reg, err := shardmesh.Init(sys, rememberedBenchType(&c, true))
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			r = reg
		}
	}
	measureStarts(b, r, &c)
}

// measureStarts times b.N durable starts through r (after 300 to warm up), with the CPU the
// process spends on them, then Badger's batched fsync in the same process, and reports both.
func measureStarts(b *testing.B, r *shardmesh.Region[[]byte, []byte], c *durableStarts) {
	startEntities(b, r, "warm-", 300)
	b.ResetTimer()
	cpu := processCPU()
	rate := startEntities(b, r, "e-", b.N)
	cpu = processCPU() - cpu
	b.StopTimer()
	rawKeys := max(b.N, 100_000)
	rawCPU := processCPU()
	raw := badgerBatchedFsync(b, rawKeys)
	rawCPU = processCPU() - rawCPU
	if c.failed.Load() > 0 {
		b.Fatalf("%d entities failed to load their state", c.failed.Load())
	}
	b.ReportMetric(rate, "starts/s")
	b.ReportMetric(raw, "badger-keys/s")
	b.ReportMetric(rate/raw, "ratio")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/start")
	b.ReportMetric(float64(rawCPU.Microseconds())/float64(rawKeys), "badger-cpu-µs/key")
}

func benchDurableStarts(b *testing.B, load bool, workers int) {
	var c durableStarts
	var opts []shardmesh.Option
	if workers > 0 {
		opts = append(opts, func(c *node.Config) { c.Workers.Workers = workers })
	}
	sys := startDurableMember(b, b.TempDir(), 30, opts...)
	defer sys.Close()
	r, err := shardmesh.Init(sys, rememberedBenchType(&c, load))
	if err != nil {
		b.Fatal(err)
	}
	measureStarts(b, r, &c)
}

// rememberedCount is the number of remembered entities in one shard for
// BenchmarkRememberedShardRestart: SHARDMESH_BENCH_REMEMBERED (scripts/bench sets 100,000),
// else 10,000 so that `go test -bench .` stays quick.
func rememberedCount(tb testing.TB) int {
	n := 10_000
	if v := os.Getenv("SHARDMESH_BENCH_REMEMBERED"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			tb.Fatalf("SHARDMESH_BENCH_REMEMBERED=%q: want a positive number of entities", v)
		}
	}
	return n
}

// BenchmarkRememberedShardRestart: one shard (number-of-shards 1) on one member gets
// 100,000 durable entities (with SHARDMESH_BENCH_REMEMBERED=100000) (the start rate at that size must not collapse), then the
// member stops and starts again on the same data directory: the figure is how fast the
// shard restarts every remembered entity (each loading its state) on its own, no message
// sent. Badger batched fsync of the same run beside it.
func BenchmarkRememberedShardRestart(b *testing.B) {
	n := max(rememberedCount(b)/10*10, 10) // ten equal tenths
	for range b.N {
		dir := b.TempDir()
		var first durableStarts
		sys := startDurableMember(b, dir, 1)
		r, err := shardmesh.Init(sys, durableBenchType(&first))
		if err != nil {
			sys.Close()
			b.Fatal(err)
		}
		// Ten tenths, each timed: the last tenth's rate against the first's says whether
		// starts slow down as the shard grows.
		var tenths []float64
		for c := range 10 {
			tenths = append(tenths, startEntities(b, r, "e-"+strconv.Itoa(c)+"-", n/10))
		}
		fill := 10 / sumInverse(tenths)
		if err := sys.Close(); err != nil {
			b.Fatal(err)
		}

		var again durableStarts
		restart := time.Now()
		sys = startDurableMember(b, dir, 1)
		if _, err := shardmesh.Init(sys, durableBenchType(&again)); err != nil {
			sys.Close()
			b.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Minute)
		for again.started.Load()+again.failed.Load() < int64(n) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(restart)
		sys.Close()
		if got := again.started.Load(); got != int64(n) || again.failed.Load() > 0 {
			b.Fatalf("after the restart %d of %d remembered entities started, %d failed to load", got, n, again.failed.Load())
		}
		raw := badgerBatchedFsync(b, max(n, 100_000))
		b.ReportMetric(float64(n), "entities")
		b.ReportMetric(fill, "fill-starts/s")
		b.ReportMetric(tenths[0], "first-tenth-starts/s")
		b.ReportMetric(tenths[9], "last-tenth-starts/s")
		b.ReportMetric(float64(n)/took.Seconds(), "restart-starts/s")
		b.ReportMetric(took.Seconds(), "restart-s")
		b.ReportMetric(raw, "badger-keys/s")
		b.ReportMetric(fill/raw, "fill-ratio")
		b.ReportMetric(float64(n)/took.Seconds()/raw, "restart-ratio")
	}
}

// sumInverse returns Σ 1/r: the seconds per entity of equal-sized chunks run at rates r.
func sumInverse(rates []float64) float64 {
	var s float64
	for _, r := range rates {
		s += 1 / r
	}
	return s
}
