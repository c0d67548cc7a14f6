package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// externalType is the counter type with the external allocation strategy.
func externalType() engine.TypeConfig {
	typ := testType("counter", 1)
	typ.Coordinator.Strategy = allocation.NewExternal()
	typ.Coordinator.RebalanceInterval = 2 * time.Second
	typ.Coordinator.HandoffTimeout = 10 * time.Second
	return typ
}

// rebalanceRounds counts the rebalance rounds on the timeline.
func rebalanceRounds(s *Sim) int {
	n := 0
	for _, line := range s.Timeline() {
		if strings.Contains(line, "rebalance round") {
			n++
		}
	}
	return n
}

// TestExternalStrategyPlacesShardsWhereAsked: on a stable cluster, each shard runs on the
// member that sent its first message, however uneven that is, and stays there over many
// rebalance intervals.
func TestExternalStrategyPlacesShardsWhereAsked(t *testing.T) {
	s := New(Options{Seed: 1, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{externalType()}, NumberOfShards: 30})
	for range 3 {
		s.AddNode(nil, "1")
	}
	startThree(s)
	if !s.RunUntil(s.Converged, 20*time.Second) {
		t.Fatalf("no convergence:\n%s", s.Status())
	}
	s.RunFor(2 * time.Second)
	// Entities e0…e59: node 3 sends first to those whose shard is < 20, node 1 to the rest.
	first := map[shard.ID]int{}
	for i := range 60 {
		e := shard.EntityID(fmt.Sprintf("e%d", i))
		sh := s.extract(e)
		if _, seen := first[sh]; !seen {
			first[sh] = 1
			if len(sh) < 2 || sh < "20" {
				first[sh] = 3
			}
		}
		s.Send(first[sh], "counter", e)
		s.RunFor(20 * time.Millisecond)
	}
	s.RunFor(30 * time.Second) // fifteen rebalance intervals
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for sh, node := range first {
		if _, ok := s.Node(node).E.Shards("counter")[sh]; !ok {
			t.Errorf("shard %s, first asked for by node %d, does not run there:\n%s", sh, node, s.DescribeShards("counter"))
		}
	}
	if n := len(s.Node(2).E.Shards("counter")); n != 0 {
		t.Errorf("node 2 asked for nothing and hosts %d shards", n)
	}
	if n := rebalanceRounds(s); n != 0 {
		t.Errorf("%d rebalance rounds with the external strategy", n)
	}
}

// TestExternalStrategySoak runs random schedules of joins, kills, graceful leaves,
// partitions and pins with the external strategy while members send messages. The
// simulation's invariants hold after every delivered message (at most one live instance of
// an entity, no shard on two members); at the end every entity answers, pinned shards run on
// their pins, and no rebalance round ever ran.
func TestExternalStrategySoak(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 6
	}
	if v := os.Getenv("SHARDMESH_EXTERNAL_SOAK_RUNS"); v != "" {
		runs, _ = strconv.Atoi(v)
	}
	for seed := uint64(1); seed <= uint64(runs); seed++ {
		s, err := externalSchedule(seed)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s\ntimeline:\n%s", seed, err, s.TrafficReport(), strings.Join(s.Timeline(), "\n"))
		}
	}
}

func externalSchedule(seed uint64) (*Sim, error) {
	r := rand.New(rand.NewPCG(seed, 0xe87))
	cfg := membership.DefaultConfig()
	cfg.SplitBrainResolver.StableAfter = 3 * time.Second
	s := New(Options{Seed: seed, Membership: cfg, Types: []engine.TypeConfig{externalType()}, NumberOfShards: 30})
	s.Net.MaxLatency = 10 * time.Millisecond
	size := 3 + r.IntN(2)
	for range size {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	for i := 2; i <= size; i++ {
		s.Start(i, 1)
	}
	s.RunFor(3 * time.Second)
	running := s.Running
	pick := func(from []int) int { return from[r.IntN(len(from))] }
	load := func(d time.Duration) {
		for end := s.Now().Add(d); s.Now().Before(end); {
			if live := running(); len(live) > 0 {
				s.Send(pick(live), "counter", shard.EntityID(fmt.Sprintf("e%d", r.IntN(200))))
			}
			s.RunFor(time.Duration(10+r.IntN(40)) * time.Millisecond)
		}
	}
	for range 4 + r.IntN(4) {
		live := running()
		var dead []int
		for _, n := range s.Nodes() {
			if !n.Alive {
				dead = append(dead, n.Index)
			}
		}
		switch k := r.IntN(6); {
		case k == 0 && len(live) > 2:
			s.Kill(pick(live))
		case k == 1 && len(dead) > 0 && len(live) > 0:
			s.Start(pick(dead), pick(live))
		case k == 2 && len(live) > 0 && len(s.Nodes()) < 6:
			s.Start(s.AddNode(nil, "1").Index, pick(live))
		case k == 3 && len(live) > 2:
			s.Leave(pick(live))
		case k == 4:
			a, b := []int{}, []int{}
			for _, n := range s.Nodes() {
				if r.IntN(3) == 0 {
					b = append(b, n.Index)
				} else {
					a = append(a, n.Index)
				}
			}
			s.logf("partition %v / %v", a, b)
			s.Net.Partition(a, b)
		default:
			s.logf("heal")
			s.Net.Heal()
		}
		if live := running(); len(live) > 0 && r.IntN(2) == 0 {
			d := s.Directives()
			if d.Pins["counter"] == nil {
				d.Pins["counter"] = map[shard.ID]membership.NodeID{}
			}
			sh := shard.ID(fmt.Sprint(r.IntN(30)))
			if _, pinned := d.Pins["counter"][sh]; pinned && r.IntN(2) == 0 {
				delete(d.Pins["counter"], sh)
			} else {
				d.Pins["counter"][sh] = s.Node(pick(live)).ID
			}
			s.SetDirectives(d)
		}
		load(time.Duration(2+r.IntN(6)) * time.Second)
		if err := s.Err(); err != nil {
			return s, err
		}
	}
	s.logf("heal and settle")
	s.Net.Heal()
	if !s.RunUntil(func() bool { return len(running()) == 0 || s.Converged() }, 60*time.Second) {
		return s, fmt.Errorf("survivors did not converge:\n%s", s.Status())
	}
	s.RunFor(5 * time.Second)
	live := running()
	if len(live) == 0 {
		return s, s.Err()
	}
	before := s.traffic.next
	for i := range 200 {
		s.Send(pick(live), "counter", shard.EntityID(fmt.Sprintf("e%d", i)))
	}
	if !s.RunUntil(func() bool {
		for m := before + 1; m <= s.traffic.next; m++ {
			if s.traffic.fates[m] != handled {
				return false
			}
		}
		return true
	}, 20*time.Second) {
		return s, fmt.Errorf("the final message to every entity was not all handled within 20 s")
	}
	var err error
	if !s.RunUntil(func() bool { err = s.checkDirectives("counter"); return err == nil }, 30*time.Second) {
		return s, fmt.Errorf("pins not followed 30 s after settling: %w\n%s", err, s.DescribeShards("counter"))
	}
	if n := rebalanceRounds(s); n != 0 {
		return s, fmt.Errorf("%d rebalance rounds with the external strategy", n)
	}
	if u := s.unaccounted(); len(u) > 0 {
		return s, fmt.Errorf("%d messages neither handled, rejected nor lost with a cause", len(u))
	}
	return s, s.Err()
}
