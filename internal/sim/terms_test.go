package sim

import (
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
)

// TestTermReachesTheMembersThatJoinLater: the first member's coordinator claims its term
// while it is alone, so its write reaches that member only. As three more join, the term is
// written again, and with anti-entropy off every disk holds it: a restarted cluster that
// comes back without the first member (a majority of the last cluster) reads it and claims a
// higher one. Without the writes again, TestRuntimeSoak seed 397 issued the epochs of a term
// claimed before, and every save fenced under them was refused.
func TestTermReachesTheMembersThatJoinLater(t *testing.T) {
	s := New(Options{Seed: 1, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{testType("counter", 1)},
		AntiEntropyInterval: -1})
	for range 4 {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	s.RunFor(2 * time.Second)
	for i := 2; i <= 4; i++ {
		s.Start(i, 1)
	}
	s.RunFor(5 * time.Second)
	key := datadir.Key(datadir.FamilyTerm, "counter")
	var term string
	for _, n := range s.Nodes() {
		var got string
		for _, r := range n.store.disk.Records() {
			if r.Key == key {
				got = string(r.Value)
			}
		}
		if got == "" || (term != "" && got != term) {
			t.Fatalf("%s's disk holds the term %q (%s's: %q)", n.ID, got, s.Node(1).ID, term)
		}
		term = got
	}
	for i := 1; i <= 4; i++ {
		s.Kill(i)
	}
	s.Start(2)
	s.Start(3, 2)
	s.Start(4, 2)
	s.RunFor(5 * time.Second)
	co := s.Node(2).E.Coordinator("counter")
	if co == nil || co.Term()>>16 < 2 {
		t.Fatalf("after a restart without the first member the coordinator's term is %v (the first one claimed %s)", co, term)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
}
