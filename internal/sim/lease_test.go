package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// TestSeparateClustersShareALease: a deployment mistake forms two clusters from four members
// that cannot see each other, with downing off; both get messages for the same entities and
// both allocate the same shards. With the shards' lease on (an external lease service both
// reach), no entity ever runs in both clusters at once (checked after every delivered
// message) while kills and restarts move shards around; without it, the check fails.
func TestSeparateClustersShareALease(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 5
	}
	done := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		s, err := separateClusters(seed, true)
		if err != nil {
			t.Fatalf("seed %d: %v\ntimeline:\n%s", seed, err, timelineTail(s, 60))
		}
		for _, f := range s.traffic.fates {
			if f == handled {
				done++
			}
		}
	}
	if done == 0 {
		t.Fatal("no message was handled: the leases were never granted")
	}
	t.Logf("%d schedules, %d messages handled, no entity in both clusters", seeds, done)
	if _, err := separateClusters(1, false); err == nil {
		t.Fatal("without the lease the two clusters never ran an entity at once: the schedule does not test the lease")
	}
}

func separateClusters(seed uint64, useLease bool) (*Sim, error) {
	r := rand.New(rand.NewPCG(seed, 0x1ea5e))
	cfg := membership.DefaultConfig()
	cfg.SplitBrainResolver.ActiveStrategy = "off"
	typ := testType("counter", 1)
	typ.Shard.Lease = shard.Lease{Enabled: useLease, RetryInterval: 500 * time.Millisecond}
	s := New(Options{Seed: seed, Membership: cfg, Types: []engine.TypeConfig{typ}, NumberOfShards: 10, SeparateClusters: true})
	for range 4 {
		s.AddNode(nil, "1")
	}
	s.Net.Partition([]int{1, 2}, []int{3, 4})
	s.Start(1)
	s.Start(2, 1)
	s.Start(3)
	s.Start(4, 3)
	s.RunFor(3 * time.Second)
	for step := 0; step < 8; step++ {
		if r.IntN(3) == 0 {
			i := 1 + r.IntN(4)
			if n := s.Node(i); n.Alive {
				s.Kill(i)
				s.RunFor(time.Duration(r.IntN(2000)) * time.Millisecond)
				peer := map[int]int{1: 2, 2: 1, 3: 4, 4: 3}[i]
				if s.Node(peer).Alive {
					s.Start(i, peer)
				} else {
					s.Start(i)
				}
			}
		}
		for end := s.Now().Add(time.Duration(1+r.IntN(3)) * time.Second); s.Now().Before(end); {
			var live []int
			for _, n := range s.Nodes() {
				if n.Running() {
					live = append(live, n.Index)
				}
			}
			if len(live) > 0 {
				s.Send(live[r.IntN(len(live))], "counter", shard.EntityID(fmt.Sprintf("e%d", r.IntN(20))))
			}
			s.RunFor(time.Duration(5+r.IntN(20)) * time.Millisecond)
			if s.Err() != nil {
				return s, s.Err()
			}
		}
	}
	return s, s.Err()
}
