package passivation

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The synthetic workloads below show what the documentation says about each policy: which
// access pattern it suits and which it does not. Each compares active rates (hit rates)
// measured on the same trace, from a fixed seed.

func intHash(k int) uint32 { return uint32(k) ^ uint32(uint64(k)>>32) }

// activeRate replays keys through a single shard's policy and returns the percentage of
// accesses in keys[from:] that found their entity active, and the policy.
func activeRate(t *testing.T, s Settings, keys []int, from int) (float64, *Policy[int]) {
	t.Helper()
	p, err := NewPolicy(s, intHash)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	var out []int
	hits := 0
	for i, k := range keys {
		if i >= from && p.Contains(k) {
			hits++
		}
		out = p.Access(k, now, out[:0])
		if p.Len() > p.Limit() {
			t.Fatalf("%d active entities over a limit of %d", p.Len(), p.Limit())
		}
	}
	return 100 * float64(hits) / float64(len(keys)-from), p
}

// zipfKeys returns n keys from offset+[0, 10,000) drawn from a Zipf distribution (s = 1.1).
func zipfKeys(r *rand.Rand, n, offset int) []int {
	z := rand.NewZipf(r, 1.1, 1, 9999)
	keys := make([]int, n)
	for i := range keys {
		keys[i] = offset + int(z.Uint64())
	}
	return keys
}

func staticWindow(limit int) Settings {
	s := DefaultStrategy().WithActiveEntityLimit(limit)
	s.Admission.Window.Optimizer = NoOptimizer
	return s
}

func TestLoopFavoursMostRecentlyUsed(t *testing.T) {
	// A cycle over 750 entities with room for 500: LRU always passivates the entity needed
	// next; MRU keeps most of the cycle.
	var keys []int
	for range 20 {
		for k := range 750 {
			keys = append(keys, k)
		}
	}
	lru, _ := activeRate(t, Limited(500, LRU()), keys, 750)
	mru, _ := activeRate(t, Limited(500, MRU()), keys, 750)
	t.Logf("loop: LRU %.2f%%, MRU %.2f%%", lru, mru)
	if lru > 1 || mru < 60 {
		t.Fatalf("loop: LRU %.2f%% (want ≈ 0), MRU %.2f%% (want > 60%%)", lru, mru)
	}
}

func TestZipfFavoursLeastFrequentlyUsed(t *testing.T) {
	keys := zipfKeys(rand.New(rand.NewPCG(1, 2)), 100_000, 0)
	lru, _ := activeRate(t, Limited(500, LRU()), keys, 50_000)
	lfu, _ := activeRate(t, Limited(500, LFU(false)), keys, 50_000)
	mru, _ := activeRate(t, Limited(500, MRU()), keys, 50_000)
	t.Logf("zipf: LRU %.2f%%, LFU %.2f%%, MRU %.2f%%", lru, lfu, mru)
	if lfu < lru+3 || mru > lru-30 {
		t.Fatalf("zipf: LFU %.2f%% should beat LRU %.2f%% by 3 points, and MRU %.2f%% lose by far", lfu, lru, mru)
	}
}

func TestPopularityShift(t *testing.T) {
	// 100,000 accesses to one popular set, then 100,000 to a disjoint one. Plain LFU keeps
	// the formerly popular entities (their counts are high) and recovers poorly; dynamic
	// aging and Window-TinyLFU (whose sketch halves its counts) recover.
	r := rand.New(rand.NewPCG(3, 4))
	before := zipfKeys(r, 100_000, 0)
	keys := append(before, zipfKeys(r, 100_000, 1_000_000)...)
	for _, tc := range []struct {
		name      string
		settings  Settings
		recovered bool
	}{
		{"LFU", Limited(500, LFU(false)), false},
		{"LFU-DA", Limited(500, LFU(true)), true},
		{"W-TinyLFU with hill climbing", DefaultStrategy().WithActiveEntityLimit(500), true},
	} {
		ref, _ := activeRate(t, tc.settings, before, 50_000)
		after, _ := activeRate(t, tc.settings, keys, 150_000)
		t.Logf("%s: %.2f%% before the shift, %.2f%% after", tc.name, ref, after)
		if got := after >= 0.9*ref; got != tc.recovered {
			t.Errorf("%s: %.2f%% before the shift, %.2f%% after; recovered = %v, want %v", tc.name, ref, after, got, tc.recovered)
		}
	}
}

func TestHillClimbingAdaptsTheWindow(t *testing.T) {
	// A frequency-biased phase, then a recency-biased one: a sliding working set in which
	// each entity is used a few times in a short span and then never again. A 1% window
	// is too small to hold it; hill climbing grows the window.
	r := rand.New(rand.NewPCG(5, 6))
	keys := zipfKeys(r, 100_000, 0)
	for i := range 100_000 {
		keys = append(keys, 5_000_000+i/8+r.IntN(64))
	}
	static, _ := activeRate(t, staticWindow(500), keys, 150_000)
	climbing, p := activeRate(t, DefaultStrategy().WithActiveEntityLimit(500), keys, 150_000)
	t.Logf("recency phase: static 1%% window %.2f%%, hill climbing %.2f%% (window now %.3f)", static, climbing, p.WindowProportion())
	if climbing < static+20 || p.WindowProportion() < 0.1 || p.WindowProportion() > 1 {
		t.Fatalf("hill climbing %.2f%% (window %.3f) should beat a static window %.2f%% by 20 points", climbing, p.WindowProportion(), static)
	}
}

func TestAdmissionFilterResistsScans(t *testing.T) {
	// 400 popular entities used repeatedly, then a scan of 10,000 entities used once each:
	// LRU loses every popular entity, Window-TinyLFU keeps them.
	var keys []int
	for range 10 {
		for k := range 400 {
			keys = append(keys, k)
		}
	}
	for k := range 10_000 {
		keys = append(keys, 1_000_000+k)
	}
	survivors := func(p *Policy[int]) int {
		n := 0
		for k := range 400 {
			if p.Contains(k) {
				n++
			}
		}
		return n
	}
	_, lru := activeRate(t, Limited(500, LRU()), keys, 0)
	_, tiny := activeRate(t, staticWindow(500), keys, 0)
	if n := survivors(lru); n != 0 {
		t.Errorf("LRU kept %d popular entities through the scan, want 0", n)
	}
	if n := survivors(tiny); n < 390 {
		t.Errorf("W-TinyLFU kept %d of 400 popular entities through the scan", n)
	}
}
