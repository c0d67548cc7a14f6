package simulator

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/shardmesh/shardmesh/passivation"
)

// tracesDir locates the shared LIRS traces: $SHARDMESH_TRACES, or ../shared/traces from
// the module root (found by walking up to go.mod). It skips the test when they are absent.
func tracesDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("SHARDMESH_TRACES"); dir != "" {
		return dir
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the test directory; cannot locate ../shared/traces")
		}
		dir = parent
	}
	traces := filepath.Join(dir, "..", "shared", "traces")
	if _, err := os.Stat(traces); err != nil {
		t.Skipf("trace folder %s not found (set SHARDMESH_TRACES to run the Akka comparison): %v", traces, err)
	}
	return traces
}

func loadTrace(t *testing.T, name string) []string {
	t.Helper()
	path := filepath.Join(tracesDir(t), name)
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("trace %s not available: %v", path, err)
	}
	defer func() { _ = f.Close() }()
	ids, err := ReadTrace(f, LIRS)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ids
}

// The strategies of Akka's simulator runs (lirs-trace-glimpse.conf, lirs-trace-multi.conf).
func akkaStrategy(name string) passivation.Settings {
	switch name {
	case "LRU":
		return passivation.Limited(1, passivation.LRU())
	case "SLRU":
		return passivation.Limited(1, passivation.SegmentedLRU(0.2, 0.8))
	case "S4LRU":
		return passivation.Limited(1, passivation.EvenlySegmentedLRU(4))
	case "MRU":
		return passivation.Limited(1, passivation.MRU())
	case "LFU":
		return passivation.Limited(1, passivation.LFU(false))
	case "LFUDA":
		return passivation.Limited(1, passivation.LFU(true))
	case "LRU/FS/SLRU": // Window-TinyLFU with a static 1% window
		s := passivation.DefaultStrategy()
		s.Admission.Window.Optimizer = passivation.NoOptimizer
		return s
	case "LRU/FS/SLRU/HC": // Window-TinyLFU with hill climbing: default-strategy's shape
		return passivation.DefaultStrategy()
	}
	panic("unknown strategy " + name)
}

// akkaRuns are the active rates Akka publishes for its simulator on the LIRS traces, with
// 10 shards in 1 region. Recency policies are deterministic and must match to 0.05 points;
// the composite ones within 0.5. The required rows are LRU, SLRU and LRU/FS/SLRU/HC; the
// others check the remaining policies the same way.
var akkaRuns = []struct {
	trace    string
	strategy string
	limits   []int
	active   []float64 // percent, as Akka prints them
}{
	{"gli.trace.gz", "LRU", []int{250, 500, 1000, 1500}, []float64{0.91, 0.95, 11.20, 36.55}},
	{"gli.trace.gz", "SLRU", []int{250, 500, 1000, 1500}, []float64{1.38, 1.38, 31.33, 51.85}},
	{"gli.trace.gz", "LRU/FS/SLRU/HC", []int{250, 500, 1000, 1500}, []float64{13.43, 32.40, 50.83, 53.54}},
	{"multi3.trace.gz", "LRU", []int{100, 200, 400, 800, 1600}, []float64{6.53, 14.38, 27.55, 35.97, 44.23}},
	{"multi3.trace.gz", "LRU/FS/SLRU/HC", []int{100, 200, 400, 800, 1600}, []float64{24.74, 32.38, 42.63, 47.11, 57.65}},

	{"gli.trace.gz", "S4LRU", []int{250, 500, 1000, 1500}, []float64{1.38, 1.38, 19.70, 48.02}},
	{"gli.trace.gz", "MRU", []int{250, 500, 1000, 1500}, []float64{14.78, 31.40, 48.62, 53.37}},
	{"gli.trace.gz", "LFU", []int{250, 500, 1000, 1500}, []float64{1.38, 1.38, 31.33, 51.85}},
	{"gli.trace.gz", "LFUDA", []int{250, 500, 1000, 1500}, []float64{1.11, 1.25, 16.37, 51.85}},
	{"gli.trace.gz", "LRU/FS/SLRU", []int{250, 500, 1000, 1500}, []float64{13.43, 32.40, 50.83, 53.54}},
	{"multi3.trace.gz", "SLRU", []int{100, 200, 400, 800, 1600}, []float64{9.22, 22.41, 29.94, 37.30, 46.51}},
	// S4LRU at 100 (10 per shard) is left out: Akka's published figure (8.43 %) predates
	// its change that gives the lowest segment the rounding leftover (2+2+2+4 rather than
	// 2+2+2+2 = 8 of 10); with the old rounding this code reproduces it exactly.
	{"multi3.trace.gz", "S4LRU", []int{200, 400, 800, 1600}, []float64{22.62, 30.10, 37.30, 46.51}},
	{"multi3.trace.gz", "MRU", []int{100, 200, 400, 800, 1600}, []float64{2.41, 4.20, 7.21, 14.11, 26.31}},
	{"multi3.trace.gz", "LFU", []int{100, 200, 400, 800, 1600}, []float64{8.88, 22.14, 29.85, 37.30, 46.51}},
	{"multi3.trace.gz", "LFUDA", []int{100, 200, 400, 800, 1600}, []float64{10.16, 22.99, 30.50, 37.25, 46.21}},
	{"multi3.trace.gz", "LRU/FS/SLRU", []int{100, 200, 400, 800, 1600}, []float64{25.96, 32.56, 42.64, 46.94, 57.65}},
}

func TestAkkaPublishedActiveRates(t *testing.T) {
	traces := map[string][]string{}
	for _, run := range akkaRuns {
		ids, ok := traces[run.trace]
		if !ok {
			ids = loadTrace(t, run.trace)
			traces[run.trace] = ids
		}
		tolerance := 0.05
		if run.strategy == "LRU/FS/SLRU" || run.strategy == "LRU/FS/SLRU/HC" {
			tolerance = 0.5
		}
		for i, limit := range run.limits {
			cfg := Config{Settings: akkaStrategy(run.strategy).WithActiveEntityLimit(limit), Regions: 1, Shards: 10}
			stats, err := Run(cfg, ids)
			if err != nil {
				t.Fatal(err)
			}
			got, want := stats.ActiveRate(), run.active[i]
			diff := got - want
			t.Logf("%-16s %-15s %5d  Akka %6.2f %%  ours %6.2f %%  diff %+.3f", run.trace, run.strategy, limit, want, got, diff)
			if math.Abs(diff) > tolerance {
				t.Errorf("%s %s %d: active rate %.2f %%, Akka publishes %.2f %% (tolerance %.2f)", run.trace, run.strategy, limit, got, want, tolerance)
			}
		}
	}
}

func TestLoopTraceFavoursMostRecentlyUsed(t *testing.T) {
	// The looping LIRS trace cycles over about 1,000 ids: with room for half, LRU misses
	// every time and MRU keeps half the loop.
	ids := loadTrace(t, "loop.trace.gz")[:100_000]
	rate := func(p passivation.PolicySettings) float64 {
		stats, err := Run(Config{Settings: passivation.Limited(500, p), Regions: 1, Shards: 10}, ids)
		if err != nil {
			t.Fatal(err)
		}
		return stats.ActiveRate()
	}
	lru, mru := rate(passivation.LRU()), rate(passivation.MRU())
	t.Logf("loop: LRU %.2f %%, MRU %.2f %%", lru, mru)
	if lru > 1 || mru < 40 {
		t.Fatalf("loop: LRU %.2f %% (want ≈ 0), MRU %.2f %% (want > 40 %%)", lru, mru)
	}
}
