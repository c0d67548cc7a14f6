package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// TestHandoffGoesStraightToTheNextHome: a member that leaves hands its shards off; each
// starts on its next home one network hop after the old home stopped it (the old home's
// word, HandedOver), not two (the old home's ShardStopped to the coordinator, then the
// coordinator's HostShard), and the messages sent to those shards during the handoff,
// buffered by their senders, are handled there without waiting for the coordinator to
// answer after the stop. The coordinator runs on a third member, so that every hop is a
// network one.
func TestHandoffGoesStraightToTheNextHome(t *testing.T) {
	const hop = 10 * time.Millisecond
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := membership.DefaultConfig()
		s := New(Options{Seed: seed, Membership: cfg, Types: []engine.TypeConfig{testType("counter", 1)}, NumberOfShards: 30})
		s.Net.MinLatency, s.Net.MaxLatency = hop, hop
		for range 4 {
			s.AddNode(nil, "1")
		}
		s.Start(1) // the oldest: it runs the coordinator
		for i := 2; i <= 4; i++ {
			s.Start(i, 1)
		}
		s.RunFor(3 * time.Second)
		for e := range 120 {
			s.Send(2+e%3, "counter", shard.EntityID(fmt.Sprintf("e%d", e)))
		}
		s.RunFor(3 * time.Second)
		const leaver = 2
		leaving := map[shard.ID]bool{}
		for id := range s.Node(leaver).E.Shards("counter") {
			leaving[id] = true
		}
		if len(leaving) == 0 {
			t.Fatalf("seed %d: the leaver hosts no shard:\n%s", seed, s.DescribeShards("counter"))
		}
		s.Leave(leaver)
		// Messages to the leaver's entities while it hands them off, from a member that is
		// neither the coordinator's nor a next home necessarily.
		for e := range 120 {
			if id := shard.EntityID(fmt.Sprintf("e%d", e)); leaving[s.extract(id)] {
				s.Send(4, "counter", id)
			}
		}
		stopped, started := map[shard.ID]time.Time{}, map[shard.ID]time.Time{}
		if !s.RunUntil(func() bool {
			for id := range leaving {
				if _, ok := stopped[id]; !ok && s.Node(leaver).E.Shards("counter")[id] == nil {
					stopped[id] = s.Now()
				}
				if _, ok := started[id]; ok {
					continue
				}
				for _, n := range s.Nodes() {
					if n.Index != leaver && n.Alive && n.E.Shards("counter")[id] != nil {
						started[id] = s.Now()
					}
				}
			}
			return len(started) == len(leaving)
		}, 10*time.Second) {
			t.Fatalf("seed %d: %d of the leaver's %d shards started elsewhere:\n%s", seed, len(started), len(leaving), s.DescribeShards("counter"))
		}
		for id := range leaving {
			if took := started[id].Sub(stopped[id]); took > hop {
				t.Errorf("seed %d: shard %s started %v after its old home stopped it, want one hop (%v)", seed, id, took, hop)
			}
		}
		s.RunFor(5 * time.Second)
		if s.Err() != nil {
			t.Fatalf("seed %d: %v", seed, s.Err())
		}
		for _, f := range s.traffic.fates {
			if f != handled {
				t.Fatalf("seed %d: a graceful handoff lost or refused messages:\n%s", seed, s.TrafficReport())
			}
		}
	}
}
