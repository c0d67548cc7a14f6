package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// versionBlind is a strategy that does not see app versions: the least-shard strategy on a
// view whose regions all claim one version. Rolling updates are counted against it.
type versionBlind struct{ allocation.LeastShard }

func (b versionBlind) blind(v allocation.View) allocation.View {
	w := v
	w.Regions = append([]allocation.Region(nil), v.Regions...)
	for i := range w.Regions {
		w.Regions[i].AppVersion = ""
	}
	return w
}

func (b versionBlind) Allocate(req membership.NodeID, s shard.ID, v allocation.View) membership.NodeID {
	return b.LeastShard.Allocate(req, s, b.blind(v))
}

func (b versionBlind) Rebalance(v allocation.View) []shard.ID {
	return b.LeastShard.Rebalance(b.blind(v))
}

// TestRollingUpdate restarts every member of a cluster under load, one after the other,
// each coming back with app version 2 (the first member again last: the coordinator moves
// each time its member restarts), with the version-aware least-shard strategy and with a
// version-blind one, across seeds. The invariants hold after every delivered message (at
// most one live instance of an entity, no shard on two members); at the end every shard is
// on a version-2 member, balanced, and the version-aware strategy moved fewer shards in all.
func TestRollingUpdate(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 5
	}
	moves := map[string]int{}
	for _, aware := range []bool{true, false} {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			s, err := rollingSchedule(seed, aware)
			name := map[bool]string{true: "version-aware", false: "version-blind"}[aware]
			if err != nil {
				t.Fatalf("%s seed %d: %v\ntimeline:\n%s", name, seed, err, timelineTail(s, 60))
			}
			moves[name] += s.Moves
		}
	}
	t.Logf("shard moves over %d rolling updates: version-aware %d, version-blind %d", seeds, moves["version-aware"], moves["version-blind"])
	if moves["version-aware"] >= moves["version-blind"] {
		t.Fatalf("the version-aware strategy moved %d shards, the version-blind one %d", moves["version-aware"], moves["version-blind"])
	}
}

func timelineTail(s *Sim, n int) string {
	tl := s.Timeline()
	if len(tl) > n {
		tl = tl[len(tl)-n:]
	}
	out := ""
	for _, l := range tl {
		out += l + "\n"
	}
	return out
}

func rollingSchedule(seed uint64, aware bool) (*Sim, error) {
	r := rand.New(rand.NewPCG(seed, 0x4011))
	typ := testType("counter", 1)
	lc := allocation.DefaultLeastShardConfig()
	lc.RebalanceAbsoluteLimit, lc.RebalanceRelativeLimit = 10, 0.34
	lc.RollingUpdateMoves = aware
	ls, err := allocation.NewLeastShard(lc)
	if err != nil {
		return nil, err
	}
	typ.Coordinator.Strategy = ls
	if !aware {
		typ.Coordinator.Strategy = versionBlind{ls}
	}
	typ.Coordinator.RebalanceInterval = 2 * time.Second
	s := New(Options{Seed: seed, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{typ}, NumberOfShards: 30})
	size := 3 + r.IntN(3)
	for range size {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	for i := 2; i <= size; i++ {
		s.Start(i, 1)
	}
	load := func(d time.Duration) {
		for end := s.Now().Add(d); s.Now().Before(end); {
			var live []int
			for _, n := range s.Nodes() {
				if n.Running() {
					live = append(live, n.Index)
				}
			}
			if len(live) > 0 {
				s.Send(live[r.IntN(len(live))], "counter", shard.EntityID(fmt.Sprintf("e%d", r.IntN(300))))
			}
			s.RunFor(time.Duration(5+r.IntN(20)) * time.Millisecond)
		}
	}
	if !s.RunUntil(s.Converged, 10*time.Second) {
		return s, fmt.Errorf("did not converge:\n%s", s.Status())
	}
	load(5 * time.Second)
	s.Moves = 0 // count the update's moves only
	order := make([]int, 0, size)
	for i := 2; i <= size; i++ {
		order = append(order, i)
	}
	order = append(order, 1)
	for _, i := range order {
		n := s.Node(i)
		s.Leave(i)
		if !s.RunUntil(func() bool { return n.Stopped != nil }, 90*time.Second) {
			return s, fmt.Errorf("%s did not leave:\n%s", n.ID, s.Status())
		}
		s.Kill(i) // the process exits
		n.Version = "2"
		seed := order[0]
		if seed == i {
			seed = order[1]
		}
		s.Start(i, seed)
		if !s.RunUntil(s.Converged, 20*time.Second) {
			return s, fmt.Errorf("%s did not rejoin:\n%s", n.ID, s.Status())
		}
		load(time.Duration(3+r.IntN(5)) * time.Second)
		if s.Err() != nil {
			return s, s.Err()
		}
	}
	if !s.RunUntil(func() bool { return s.Spread("counter") <= 1 }, 30*time.Second) {
		return s, fmt.Errorf("not balanced after the update:\n%s", s.DescribeShards("counter"))
	}
	for _, n := range s.Nodes() {
		if len(n.E.Shards("counter")) > 0 && n.Version != "2" {
			return s, fmt.Errorf("%s of version %s hosts shards", n.ID, n.Version)
		}
	}
	return s, s.Err()
}
