package passivation

import (
	"slices"
	"testing"
	"time"
)

func TestIdleTrackerWithSimulatedClock(t *testing.T) {
	tr, err := NewIdleTracker[string](2*time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Interval(); got != time.Minute {
		t.Fatalf("default interval = %v, want half the timeout", got)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tr.Touch("a", at(0))
	tr.Touch("b", at(10*time.Second))
	tr.Touch("c", at(30*time.Second))
	tr.Touch("a", at(40*time.Second)) // a is active again

	if got := tr.Sweep(at(2*time.Minute+10*time.Second), nil); len(got) != 0 {
		t.Fatalf("swept %v at exactly b's timeout; only longer idleness passivates", got)
	}
	if got := tr.Sweep(at(2*time.Minute+35*time.Second), nil); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("swept %v, want [b c] (idle 145 s and 125 s)", got)
	}
	if tr.Len() != 1 {
		t.Fatalf("Len = %d after the sweep, want 1", tr.Len())
	}
	tr.Remove("a") // a stopped by itself
	if got := tr.Sweep(at(time.Hour), nil); len(got) != 0 {
		t.Fatalf("swept %v after a was removed", got)
	}
	tr.Touch("b", at(time.Hour)) // b comes back as a new entity
	if got := tr.Sweep(at(time.Hour+3*time.Minute), nil); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("swept %v, want [b]", got)
	}
}

func TestIdleTrackerRejectsNoTimeout(t *testing.T) {
	if _, err := NewIdleTracker[string](0, 0); err == nil {
		t.Fatal("NewIdleTracker accepted a zero timeout")
	}
}

func TestIdleTimeoutWithActiveEntityLimit(t *testing.T) {
	// Idle passivation combined with a limit, for every kind of policy: the sweep returns
	// idle entities from any area, and an entity passivated by the limit is not swept again.
	for _, s := range []Settings{
		Limited(3, LRU()), Limited(3, SegmentedLRU(0.2, 0.8)), Limited(3, MRU()), Limited(3, LFU(true)),
		DefaultStrategy().WithActiveEntityLimit(3),
	} {
		s = s.WithIdleTimeout(time.Minute)
		t.Run(s.String(), func(t *testing.T) {
			p, err := NewPolicy(s, StringHash[string])
			if err != nil {
				t.Fatal(err)
			}
			if p.Interval() != 30*time.Second {
				t.Fatalf("Interval = %v", p.Interval())
			}
			t0 := time.Unix(1000, 0)
			active := map[string]bool{}
			access := func(id string, at time.Duration) {
				active[id] = true
				for _, v := range p.Access(id, t0.Add(at), nil) {
					delete(active, v)
				}
			}
			for i, id := range []string{"a", "b", "c", "d", "e"} {
				access(id, time.Duration(i)*time.Second)
			}
			access("e", 50*time.Second)
			swept := p.Sweep(t0.Add(64*time.Second), nil)
			for _, id := range swept {
				if !active[id] {
					t.Fatalf("swept %q, which was not active (active: %v)", id, active)
				}
				delete(active, id)
			}
			for id := range active {
				if id != "e" {
					t.Fatalf("%q idle for over a minute was not swept (swept %v)", id, swept)
				}
			}
			if p.Len() != len(active) {
				t.Fatalf("Len = %d, want %d", p.Len(), len(active))
			}
		})
	}
}
