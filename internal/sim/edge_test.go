package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

// TestPartitionAtLeaderAction cuts the network at the instant a leader takes an action —
// Joining → Up, Leaving → Exiting, a removal — when the two sides' views differ the most
// (issue 25), for each strategy, several ways of cutting, and many seeds. Every invariant
// holds after every step, and once the resolver has decided only one side runs.
func TestPartitionAtLeaderAction(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 2
	}
	type cut struct {
		name   string
		action LeaderAction
		node   int
		groups [][]int
		cause  func(s *Sim) // provokes the action
	}
	join := func(s *Sim) { s.Start(6, 1); s.Start(7, 1) }
	leave := func(s *Sim) { s.Leave(2) }
	kill := func(s *Sim) { s.Kill(5) }
	var cuts []cut
	for _, g := range [][][]int{{{1, 2, 6, 7}, {3, 4, 5}}, {{3, 4, 6, 7}, {1, 2, 5}}, {{2, 6, 7}, {1, 3, 4, 5}}, {{1, 6, 7}, {2, 3, 4, 5}}} {
		cuts = append(cuts, cut{"n06 up", ActionUp, 6, g, join})
	}
	for _, g := range [][][]int{{{1, 2, 3}, {4, 5}}, {{2, 4, 5}, {1, 3}}, {{1, 2}, {3, 4, 5}}, {{1, 4}, {2, 3, 5}}} {
		cuts = append(cuts, cut{"n02 exiting", ActionExiting, 2, g, leave})
		cuts = append(cuts, cut{"n02 removed", ActionRemoved, 2, g, leave})
	}
	for _, g := range [][][]int{{{1, 2}, {3, 4}}, {{1, 3}, {2, 4}}, {{1}, {2, 3, 4}}, {{2, 3}, {1, 4}}} {
		cuts = append(cuts, cut{"killed n05 removed", ActionRemoved, 5, g, kill})
	}
	strategies := []struct {
		strategy membership.Strategy
		quorum   int
		cutLease bool // lease-majority: the first group cannot reach the resolver's lease
	}{{membership.KeepMajority, 0, false}, {membership.KeepOldest, 0, false}, {membership.StaticQuorum, 3, false}, {membership.StaticQuorum, 4, false},
		{membership.LeaseMajority, 0, false}, {membership.LeaseMajority, 0, true}}
	runs := 0
	for _, st := range strategies {
		for _, c := range cuts {
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				var cutLease []int
				if st.cutLease {
					cutLease = c.groups[0]
				}
				s, err := partitionAtLeaderAction1(seed, st.strategy, st.quorum, cutLease, c.action, c.node, c.groups, c.cause)
				runs++
				if err != nil {
					t.Fatalf("%s (quorum %d, lease cut from %v), partition %v at %s, seed %d: %v\ntimeline:\n%s", st.strategy, st.quorum, cutLease, c.groups, c.name, seed, err, timeline(s))
				}
			}
		}
	}
	t.Logf("%d runs: %d strategies × %d cuts × %d seeds", runs, len(strategies), len(cuts), seeds)
}

func partitionAtLeaderAction1(seed uint64, strategy membership.Strategy, quorum int, cutLease []int, action LeaderAction, node int, groups [][]int, cause func(*Sim)) (*Sim, error) {
	cfg := membership.DefaultConfig()
	cfg.SplitBrainResolver.StableAfter = 5 * time.Second
	cfg.SplitBrainResolver.ActiveStrategy = strategy
	cfg.SplitBrainResolver.QuorumSize = quorum
	s := New(Options{Seed: seed, Membership: cfg})
	for range 7 {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	for i := 2; i <= 5; i++ {
		s.Start(i, 1)
	}
	if !s.RunUntil(s.Converged, 5*time.Second) {
		return s, fmt.Errorf("not converged:\n%s", s.Status())
	}
	s.PartitionAtLeaderAction(action, node, groups...)
	cause(s)
	if !s.RunUntil(s.Fired, 20*time.Second) {
		return s, fmt.Errorf("the leader did not take the action")
	}
	s.CutResolverLease(cutLease...) // as the partition falls: the action itself needs no decision
	s.RunFor(60 * time.Second)
	if s.Err() != nil {
		return s, s.Err()
	}
	return s, s.RunningSidesConnected()
}

func timeline(s *Sim) string {
	out := ""
	for _, l := range s.Timeline() {
		out += l + "\n"
	}
	return out
}
