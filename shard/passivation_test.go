package shard_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/shard"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// stops returns the entities the shard asks to stop, in order, and clears its outputs.
func stops(s *shard.Shard[string]) []shard.EntityID {
	var ids []shard.EntityID
	for _, o := range s.Ready() {
		if o, ok := o.(shard.StopEntity); ok {
			ids = append(ids, o.Entity)
		}
	}
	return ids
}

func policy(t *testing.T, s passivation.Settings) *passivation.Policy[shard.EntityID] {
	t.Helper()
	p, err := passivation.NewPolicy(s, passivation.StringHash[shard.EntityID])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// idleShards returns a shard with an idle timeout of 10 s checked every 5 s, set up both
// ways: by a passivation policy, and by the shard's own sweep (SetIdleTimeout, what the
// engine uses for idle passivation alone). Both must decide alike.
func idleShards(t *testing.T) map[string]func() (*shard.Shard[string], time.Duration) {
	return map[string]func() (*shard.Shard[string], time.Duration){
		"policy": func() (*shard.Shard[string], time.Duration) {
			s := shard.New[string](shard.Config{}, "1")
			p := policy(t, passivation.Disabled().WithIdleTimeout(10*time.Second))
			s.SetPassivator(p)
			return s, p.Resolution()
		},
		"shard": func() (*shard.Shard[string], time.Duration) {
			s := shard.New[string](shard.Config{}, "1")
			s.SetIdleTimeout(10*time.Second, 5*time.Second)
			return s, 10 * time.Second / 16
		},
	}
}

// TestIdleEntitiesPassivate: with an idle timeout of 10 s (checked every 5 s), an entity
// stops once it has gone 10 s without a message routed to it, and not before; entities
// idle at one sweep stop least recently active first.
func TestIdleEntitiesPassivate(t *testing.T) {
	for name, newShard := range idleShards(t) {
		t.Run(name, func(t *testing.T) {
			s, _ := newShard()
			s.Deliver(start, "a", "m")
			s.Deliver(start, "b", "m")
			s.Deliver(start.Add(5*time.Second), "a", "m")
			s.Deliver(start.Add(20*time.Second), "z", "m")
			s.Deliver(start.Add(21*time.Second), "c", "m")
			s.Ready()

			for _, c := range []struct {
				at   time.Duration
				want []shard.EntityID
			}{
				{9 * time.Second, nil},  // sweep due, nobody idle for 10 s yet
				{11 * time.Second, nil}, // b is, but the next sweep is due at 14 s
				{14 * time.Second, []shard.EntityID{"b"}},
				{16 * time.Second, nil}, // a is idle for 11 s; next sweep at 19 s
				{19 * time.Second, []shard.EntityID{"a"}},
				{34 * time.Second, []shard.EntityID{"z", "c"}},
			} {
				s.Tick(start.Add(c.at))
				if got := stops(s); !slices.Equal(got, c.want) {
					t.Fatalf("at +%v: stopped %v, want %v", c.at, got, c.want)
				}
			}
		})
	}
}

// TestActiveEntityLimit: with a limit of 2 (least recently used), a third entity's first
// message passivates the least recently used one; a message that arrives while it stops
// starts its next incarnation, which in turn passivates the then least recently used one.
// At no point do more than 2 entities run once their stops complete.
func TestActiveEntityLimit(t *testing.T) {
	s := shard.New[string](shard.Config{}, "1")
	s.SetPassivator(policy(t, passivation.Limited(2, passivation.LRU())))

	s.Deliver(start, "a", "1")
	s.Deliver(start, "b", "2")
	if got := stops(s); len(got) != 0 {
		t.Fatalf("stopped %v within the limit", got)
	}
	if d, _ := s.Deliver(start, "c", "3"); d != shard.StartAndDeliver {
		t.Fatalf("c: %v", d)
	}
	if got := stops(s); !slices.Equal(got, []shard.EntityID{"a"}) {
		t.Fatalf("stopped %v, want [a]", got)
	}
	if d, _ := s.Deliver(start, "a", "4"); d != shard.Waiting {
		t.Fatalf("a while stopping: %v, want Waiting", d)
	}
	s.EntityStopped(start, "a", nil)
	var got []string
	for _, o := range s.Ready() {
		switch o := o.(type) {
		case shard.StartEntity:
			got = append(got, "start "+string(o.Entity))
		case shard.DeliverToEntity[string]:
			got = append(got, fmt.Sprintf("deliver %s %s", o.Entity, o.Msg))
		case shard.StopEntity:
			got = append(got, "stop "+string(o.Entity))
		}
	}
	want := []string{"start a", "deliver a 4", "stop b"}
	if !slices.Equal(got, want) {
		t.Fatalf("after a stopped:\n got %q\nwant %q", got, want)
	}
	s.EntityStopped(start, "b", nil)
	if running := s.Entities(); len(running) != 2 {
		t.Fatalf("running %v, want 2 entities", running)
	}
}

// TestSelfPassivationLeavesThePolicy: an entity that stops for its own reasons no longer
// counts against the limit.
func TestSelfPassivationLeavesThePolicy(t *testing.T) {
	s := shard.New[string](shard.Config{}, "1")
	p := policy(t, passivation.Limited(2, passivation.LRU()))
	s.SetPassivator(p)
	s.Deliver(start, "a", "1")
	s.Deliver(start, "b", "2")
	s.Passivate("a")
	s.EntityStopped(start, "a", nil)
	if p.Contains("a") || p.Len() != 1 {
		t.Fatalf("policy still tracks %d entities (a: %v)", p.Len(), p.Contains("a"))
	}
	s.Ready()
	s.Deliver(start, "c", "3")
	if got := stops(s); len(got) != 0 {
		t.Fatalf("stopped %v though only b and c run", got)
	}
}

// TestBusyEntityStaysWithCoalescedAccesses: with idle passivation alone, accesses closer
// together than the policy's resolution are not reported one by one, yet an entity that
// keeps getting messages is never passivated, and stops once they stop.
func TestBusyEntityStaysWithCoalescedAccesses(t *testing.T) {
	for name, newShard := range idleShards(t) {
		t.Run(name, func(t *testing.T) { busyEntityStays(t, newShard) })
	}
}

func busyEntityStays(t *testing.T, newShard func() (*shard.Shard[string], time.Duration)) {
	s, resolution := newShard()
	if resolution <= 0 || resolution > time.Second {
		t.Fatalf("resolution %v for a 10 s idle timeout", resolution)
	}
	const interval = 5 * time.Second
	at := start
	for ; at.Before(start.Add(60 * time.Second)); at = at.Add(100 * time.Millisecond) {
		s.Deliver(at, "busy", "m")
		s.Tick(at)
		if got := stops(s); len(got) != 0 {
			t.Fatalf("at +%v: stopped %v while busy", at.Sub(start), got)
		}
	}
	last := at.Add(-100 * time.Millisecond)
	for ; at.Before(last.Add(30 * time.Second)); at = at.Add(time.Second) {
		s.Tick(at)
		if got := stops(s); len(got) > 0 {
			if idle := at.Sub(last); idle < 10*time.Second || idle > 10*time.Second+interval+resolution {
				t.Fatalf("stopped after %v idle, want within the timeout plus one sweep interval and the resolution", idle)
			}
			return
		}
	}
	t.Fatal("never passivated after the messages stopped")
}
