package passivation

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// allStrategies are small-limit strategies of every kind, for property tests.
func allStrategies(limit int) map[string]Settings {
	withWindow := func(p PolicySettings, main PolicySettings, opt Optimizer) Settings {
		s := DefaultStrategy().WithActiveEntityLimit(limit)
		s.Admission.Window = DefaultWindow(p, opt)
		s.Admission.Window.Proportion = 0.2
		s.Admission.Window.HillClimbing.AdjustMultiplier = 2 // adapt often
		s.Replacement = main
		return s
	}
	filterOnly := DefaultStrategy().WithActiveEntityLimit(limit)
	filterOnly.Admission.Window = WindowSettings{}
	windowOnly := withWindow(LRU(), LRU(), NoOptimizer)
	windowOnly.Admission.Filter.Filter = NoFilter
	return map[string]Settings{
		"LRU":               Limited(limit, LRU()),
		"SLRU":              Limited(limit, SegmentedLRU(0.2, 0.8)),
		"S4LRU":             Limited(limit, EvenlySegmentedLRU(4)),
		"MRU":               Limited(limit, MRU()),
		"LFU":               Limited(limit, LFU(false)),
		"LFUDA":             Limited(limit, LFU(true)),
		"W-TinyLFU":         DefaultStrategy().WithActiveEntityLimit(limit),
		"W-TinyLFU+idle":    DefaultStrategy().WithActiveEntityLimit(limit).WithIdleTimeout(time.Second),
		"LRU window/LFU":    withWindow(LRU(), LFU(false), HillClimbing),
		"MRU window/SLRU":   withWindow(MRU(), SegmentedLRU(0.5, 0.5), HillClimbing),
		"LFUDA window/MRU":  withWindow(LFU(true), MRU(), HillClimbing),
		"filter only":       filterOnly,
		"window, no filter": windowOnly,
		"idle only":         DefaultSettings().WithIdleTimeout(time.Second),
		"LRU+idle":          Limited(limit, LRU()).WithIdleTimeout(time.Second),
		"SLRU+idle":         Limited(limit, SegmentedLRU(0.2, 0.8)).WithIdleTimeout(time.Second),
	}
}

// TestPolicyInvariants drives every kind of strategy with random accesses, removals,
// share changes and sweeps, and checks after each step that the policy's view matches the
// shard's (the entities it returned are the ones it stopped tracking), that it never
// passivates an inactive entity or the same one twice, and that it stays within its share.
func TestPolicyInvariants(t *testing.T) {
	for name, s := range allStrategies(20) {
		t.Run(name, func(t *testing.T) {
			p, err := NewPolicy(s, intHash)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(9, 10))
			active := map[int]bool{}
			now := time.Unix(0, 0)
			var out []int
			passivated := func(op string) {
				seen := map[int]bool{}
				for _, k := range out {
					if !active[k] || seen[k] {
						t.Fatalf("%s passivated %d: active %v, already returned %v (out %v)", op, k, active[k], seen[k], out)
					}
					seen[k] = true
					delete(active, k)
				}
			}
			for step := range 30_000 {
				now = now.Add(time.Duration(r.IntN(40)) * time.Millisecond)
				switch op := r.IntN(100); {
				case op < 2:
					n := r.IntN(40)
					out = p.SetLimit(n, out[:0])
					passivated(fmt.Sprintf("SetLimit(%d)", n))
				case op < 5:
					k := r.IntN(60)
					p.Remove(k)
					delete(active, k)
				case op < 7:
					out = p.Sweep(now, out[:0])
					passivated("Sweep")
				default:
					k := int(r.ExpFloat64() * 15)
					active[k] = true
					out = p.Access(k, now, out[:0])
					passivated(fmt.Sprintf("Access(%d)", k))
				}
				if p.Len() != len(active) {
					t.Fatalf("step %d: Len = %d, the shard has %d active", step, p.Len(), len(active))
				}
				for k := range active {
					if !p.Contains(k) {
						t.Fatalf("step %d: active entity %d is not tracked", step, k)
					}
				}
				if s.LimitEnabled() && p.Len() > p.Limit() {
					t.Fatalf("step %d: %d active over a share of %d", step, p.Len(), p.Limit())
				}
			}
		})
	}
}

func TestDisabledPolicyTracksNothing(t *testing.T) {
	p, err := NewPolicy[string](Disabled(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if out := p.Access(fmt.Sprint(i), time.Unix(int64(i), 0), nil); len(out) != 0 {
			t.Fatalf("passivated %v", out)
		}
	}
	if p.Len() != 0 || p.Interval() != 0 || len(p.Sweep(time.Unix(1e6, 0), nil)) != 0 || len(p.SetLimit(1, nil)) != 0 {
		t.Fatal("a disabled policy did something")
	}
}

func TestLimitWithoutReplacementPolicyIsIgnored(t *testing.T) {
	// reference.conf: a policy of none "ignores the active entity limit".
	s := DefaultSettings()
	s.ActiveEntityLimit = 2
	p, err := NewPolicy[int](s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		if out := p.Access(k, time.Unix(0, 0), nil); len(out) != 0 {
			t.Fatalf("passivated %v", out)
		}
	}
	if p.Len() != 10 {
		t.Fatalf("Len = %d", p.Len())
	}
}

func TestNewPolicyChecks(t *testing.T) {
	if _, err := NewPolicy[int](DefaultStrategy(), nil); !errors.Is(err, ErrNoHasher) {
		t.Fatalf("NewPolicy without a hasher = %v, want ErrNoHasher", err)
	}
	if _, err := NewPolicy[int](Limited(10, SegmentedLRU(0.4, 0.4)), nil); err == nil {
		t.Fatal("NewPolicy accepted invalid settings")
	}
}

func TestSetLimitShrinksAndGrows(t *testing.T) {
	p, _ := NewPolicy[int](Limited(10, LRU()), nil)
	var out []int
	for k := range 10 {
		out = p.Access(k, time.Time{}, out[:0])
	}
	if out = p.SetLimit(4, out[:0]); !slices.Equal(out, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("SetLimit(4) passivated %v, want the 6 least recently used", out)
	}
	if out = p.SetLimit(4, out[:0]); len(out) != 0 {
		t.Fatalf("SetLimit with the same share passivated %v", out)
	}
	if out = p.SetLimit(8, out[:0]); len(out) != 0 || p.Limit() != 8 {
		t.Fatalf("growing the share passivated %v", out)
	}
}

func TestRemoveForgets(t *testing.T) {
	p, _ := NewPolicy(DefaultStrategy().WithActiveEntityLimit(100), StringHash[string])
	p.Access("a", time.Time{}, nil)
	p.Access("b", time.Time{}, nil)
	p.Remove("a")
	p.Remove("nope")
	if p.Contains("a") || !p.Contains("b") || p.Len() != 1 {
		t.Fatalf("after Remove: a %v, b %v, Len %d", p.Contains("a"), p.Contains("b"), p.Len())
	}
}
