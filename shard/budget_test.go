package shard

import (
	"math"
	"testing"
	"time"
)

// step is one interval of a budget's run: the demand, what was measured, and the rate the
// budget must have after the interval closes.
type step struct {
	want     int           // starts asked for at the interval's start
	store    time.Duration // mean store round latency measured (0: no rounds)
	start    time.Duration // mean start latency measured (0: no starts)
	failures int
	rate     float64 // the rate after the interval
}

func TestRecoveryBudgetAIMD(t *testing.T) {
	cfg := Adaptive{InitialRate: 100, MaxRate: 1000, MinRate: 10, TargetLatency: 100 * time.Millisecond, Interval: time.Second}
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"slow start doubles while the budget limits and latency is low, up to max-rate", []step{
			{want: 1000, store: 5 * ms, rate: 200},
			{want: 1000, store: 5 * ms, start: 20 * ms, rate: 400},
			{want: 1000, rate: 800}, // nothing measured: no sign of congestion
			{want: 1000, rate: 1000},
			{want: 1000, rate: 1000},
		}},
		{"no demand, no growth", []step{
			{want: 0, rate: 100},
			{want: 10, store: 5 * ms, rate: 100}, // 10 fit in the budget: not limited
		}},
		{"latency above target scales the rate by target/latency (at least 1/2), then increases additively", []step{
			{want: 1000, rate: 200},
			{want: 1000, store: 125 * ms, rate: 160},
			{want: 1000, store: 50 * ms, rate: 260},
			{want: 1000, start: 300 * ms, rate: 130},
			{want: 1000, rate: 230},
		}},
		{"after a back-off the rate holds while the backlog measured drains", []step{
			{want: 1000, rate: 200},
			{want: 1000, start: 2500 * ms, rate: 100},       // holds 2.5 s: two more intervals
			{want: 1000, start: 2000 * ms, rate: 100},       // queued before the cut: no second cut
			{want: 1000, store: 5 * ms, rate: 100},          // no growth either
			{want: 1000, start: 125 * ms, rate: 80},         // judged again
			{want: 1000, failures: 1, rate: 40},             // held 125 ms only
			{want: 1000, start: 10 * time.Second, rate: 20}, // at most 4 intervals of hold
			{want: 1000, start: 10 * time.Second, rate: 20},
			{want: 1000, start: 10 * time.Second, rate: 20},
			{want: 1000, start: 10 * time.Second, rate: 20},
			{want: 1000, start: 10 * time.Second, rate: 10},
		}},
		{"a store failure halves the rate, never below min-rate", []step{
			{want: 1000, failures: 1, rate: 50},
			{want: 1000, failures: 3, rate: 25},
			{want: 1000, failures: 1, rate: 12.5},
			{want: 1000, failures: 1, rate: 10},
			{want: 1000, rate: 110},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewRecoveryBudget(cfg, t0)
			now := t0
			for i, st := range tc.steps {
				b.Take(now, st.want, 1)
				b.Take(now.Add(cfg.Interval/2), st.want, 1)
				var s RecoverySample
				if st.store > 0 {
					s.StoreOps, s.StoreTime = 4, 4*st.store
				}
				if st.start > 0 {
					s.Starts, s.StartTime = 2, 2*st.start
				}
				s.StoreFailures = st.failures
				b.Observe(s)
				now = now.Add(cfg.Interval)
				b.Take(now, 0, 1) // closes the interval
				if got := b.Rate(); math.Abs(got-st.rate) > 1e-9 {
					t.Fatalf("after interval %d: rate %v, want %v (%s)", i+1, got, st.rate, b)
				}
			}
		})
	}
}

// TestRecoveryBudgetTokens: tokens accrue at rate/members, and an idle spell buys at most
// one interval's worth.
func TestRecoveryBudgetTokens(t *testing.T) {
	cfg := Adaptive{InitialRate: 300, MaxRate: 300, Interval: time.Second, TargetLatency: time.Hour}
	for _, tc := range []struct {
		members int
		after   time.Duration
		want    int
	}{
		{1, 100 * time.Millisecond, 30},
		{3, 100 * time.Millisecond, 10},
		{3, 500 * time.Millisecond, 50},
		{1, time.Hour, 300}, // capped at one interval
		{0, 100 * time.Millisecond, 30},
	} {
		b := NewRecoveryBudget(cfg, t0)
		if got := b.Take(t0.Add(tc.after), 1_000_000, tc.members); got != tc.want {
			t.Errorf("%d members after %v: granted %d, want %d", tc.members, tc.after, got, tc.want)
		}
	}
}

// TestRecoveryBudgetCapsStartsInFlight: at most rate/members × target-latency starts are
// out at once (at least one).
func TestRecoveryBudgetCapsStartsInFlight(t *testing.T) {
	cfg := Adaptive{InitialRate: 300, MaxRate: 300, Interval: time.Second, TargetLatency: 100 * time.Millisecond}
	for _, tc := range []struct {
		members, inFlight, want int
	}{
		{1, 0, 30}, {1, 25, 5}, {1, 40, 0}, {3, 0, 10}, {3, 7, 3}, {100, 0, 1}, {100, 1, 0},
	} {
		b := NewRecoveryBudget(cfg, t0)
		b.Observe(RecoverySample{InFlight: tc.inFlight})
		if got := b.Take(t0.Add(time.Second), 1_000_000, tc.members); got != tc.want {
			t.Errorf("%d members, %d in flight: granted %d, want %d", tc.members, tc.inFlight, got, tc.want)
		}
	}
}

// TestAdaptiveDefaults: zero values take the documented defaults; an initial rate outside
// [min, max] is clamped.
func TestAdaptiveDefaults(t *testing.T) {
	a := Adaptive{}.withDefaults()
	if a.InitialRate != 1000 || a.MaxRate != 100_000 || a.MinRate != 20 || a.TargetLatency != 200*time.Millisecond || a.Interval != 250*time.Millisecond {
		t.Fatalf("defaults: %+v", a)
	}
	if a := (Adaptive{InitialRate: 5, MinRate: 10, MaxRate: 100}).withDefaults(); a.InitialRate != 10 {
		t.Fatalf("initial below min: %v", a.InitialRate)
	}
	if a := (Adaptive{InitialRate: 500, MaxRate: 100}).withDefaults(); a.InitialRate != 100 {
		t.Fatalf("initial above max: %v", a.InitialRate)
	}
}

// TestRecoveryBudgetStartsOverAfterIdle: a recovery long after the last one starts again
// from the initial rate in slow start.
func TestRecoveryBudgetStartsOverAfterIdle(t *testing.T) {
	cfg := Adaptive{InitialRate: 100, MaxRate: 1000, MinRate: 10, TargetLatency: 100 * time.Millisecond, Interval: time.Second}
	b := NewRecoveryBudget(cfg, t0)
	now := t0
	for range 3 {
		b.Take(now, 1000, 1)
		now = now.Add(cfg.Interval)
	}
	b.Observe(RecoverySample{StoreOps: 1, StoreTime: time.Second})
	b.Take(now, 1000, 1)
	if b.Rate() != 400*0.5 || b.SlowStart() { // 100, 200, 400, then × max(1/2, 100ms/1s)
		t.Fatalf("before the quiet spell: %s", b)
	}
	now = now.Add(5 * cfg.Interval)
	b.Take(now, 0, 1)
	if b.Take(now, 1000, 1); b.Rate() < 200 || b.SlowStart() {
		t.Fatalf("after 5 quiet intervals the budget started over: %s", b)
	}
	now = now.Add(21 * cfg.Interval)
	if b.Take(now, 1000, 1); b.Rate() != 100 || !b.SlowStart() {
		t.Fatalf("after 21 quiet intervals: %s", b)
	}
}
