package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// TestScaleDownThreeToTwo: a member of three leaves gracefully under durable load. Its
// shards' replica sets and the metadata's stored configuration move to the two others
// (joint quorums), so it leaves at once — well within handoff-timeout, which it never
// waits out — and every acknowledged increment is kept.
func TestScaleDownThreeToTwo(t *testing.T) {
	typ := testType("counter", 1)
	typ.Coordinator.HandoffTimeout = 30 * time.Second
	s := New(Options{Seed: 32, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{typ}, NumberOfShards: 10, Durable: true,
		AntiEntropyInterval: time.Second})
	for range 3 {
		s.AddNode(nil, "1")
	}
	startThree(s)
	load := func(d time.Duration) {
		for i, end := 0, s.Now().Add(d); s.Now().Before(end); i++ {
			s.Send(1+i%2, "counter", shard.EntityID(fmt.Sprintf("c%d", i%20)))
			s.RunFor(20 * time.Millisecond)
		}
	}
	load(5 * time.Second)
	voters := func() (names []string) {
		for _, v := range s.Node(1).store.m.MetaStatus().Voters {
			names = append(names, v.Name)
		}
		return names
	}
	if v := voters(); len(v) != 3 {
		t.Fatalf("before: the metadata group's voters are %v, want the three members", v)
	}
	left := s.Now()
	s.Leave(3)
	for s.Node(3).Stopped == nil && s.Now().Sub(left) < time.Minute {
		load(100 * time.Millisecond)
	}
	took := s.Now().Sub(left)
	if s.Node(3).Stopped == nil || took >= 10*time.Second {
		t.Fatalf("the member left after %v (handoff-timeout %v), stopped: %v\n%s", took, typ.Coordinator.HandoffTimeout, s.Node(3).Stopped, s.Timeline())
	}
	load(3 * time.Second)
	after := voters()
	if len(after) == 0 || slices.Contains(after, string(s.Node(3).ID)) {
		t.Fatalf("after: the metadata group's voters are %v, want the members left", after)
	}
	if err := s.CheckCounters(); err != nil {
		t.Fatal(err)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	t.Logf("3 -> 2: the member left %v after it was asked (handoff-timeout %v); metadata group on %v", took.Round(time.Millisecond), typ.Coordinator.HandoffTimeout, after)
}
