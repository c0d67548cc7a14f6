package metaraft

import (
	"slices"
	"testing"
	"time"
)

// TestMetaRaftCost measures a 5-voter group on a LAN-like network (0.2–1.2 ms one way, no
// loss, disks that answer at once): a metadata write's latency in virtual time, frames per
// write, and the idle cost (heartbeats among the voters; a member that is not a voter
// holds no Member and sends nothing), with raft's heartbeat every tick (100 ms, etcd's
// default) and every 5 ticks.
func TestMetaRaftCost(t *testing.T) {
	for _, hb := range []int{1, 5} {
		s := newSim(t, 1, Config{HeartbeatTicks: hb, ElectionTicks: 10 * hb})
		s.minDelay, s.spread = 200*time.Microsecond, time.Millisecond
		all := names(5)
		for i, name := range all {
			s.add(name, i == 0)
			s.nodes[i].view = all
		}
		s.every(time.Second, 2*time.Second, func() { s.drive(0) })
		s.run(10 * time.Second)
		if c := s.nodes[0].m.configuration(0); c.Joint() || !slices.Equal(voterNames(c.Voters), all) {
			t.Fatalf("the group is %+v, want %v", c, all)
		}

		// Idle: 20 s.
		const idle = 20 * time.Second
		sends, byMember := s.sends, map[int]int{}
		for i := range s.nodes {
			byMember[i] = s.sent[i]
		}
		s.run(idle)
		idleFrames := s.sends - sends
		ticks := float64(idle / (100 * time.Millisecond))
		perTick := float64(idleFrames) / ticks
		var lead, follower float64
		for i, n := range s.nodes {
			rate := float64(s.sent[i]-byMember[i]) / idle.Seconds()
			if isLead, _ := n.m.IsLeader(); isLead {
				lead = rate
			} else {
				follower = max(follower, rate)
			}
		}
		t.Logf("heartbeat every %d tick(s): idle %.1f frames per tick (100 ms) for the group; sent per second: leader %.1f, a follower %.1f; a non-voter 0",
			hb, perTick, lead, follower)

		// Writes: one every 100 ms from a random member for 30 s.
		const busy = 30 * time.Second
		sends, acked := s.sends, len(s.acked)
		s.latencies = nil
		s.every(90*time.Millisecond, 110*time.Millisecond, func() { s.write(s.rng.IntN(len(s.nodes))) })
		s.run(busy)
		s.stopped = true
		s.run(time.Second)
		writes := len(s.acked) - acked
		frames := s.sends - sends
		net := float64(frames) - perTick*float64((busy+time.Second)/(100*time.Millisecond))
		slices.Sort(s.latencies)
		p50, p99 := s.latencies[len(s.latencies)/2], s.latencies[len(s.latencies)*99/100]
		t.Logf("heartbeat every %d tick(s): %d writes, latency p50 %v p99 %v max %v; %.1f frames per write (%.1f above the idle heartbeats), %.0f bytes per frame",
			hb, writes, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), s.latencies[len(s.latencies)-1].Round(10*time.Microsecond),
			float64(frames)/float64(writes), net/float64(writes), float64(s.frameBytes)/float64(s.sends))
		// A write from a follower: the proposal to the leader, the entry to 4 followers and
		// their answers, the commit index to 4 and their answers: 17 frames at most.
		if writes < 250 || p99 > 10*time.Millisecond || net/float64(writes) > 18 {
			t.Errorf("heartbeat every %d: %d writes, p99 %v, %.1f frames per write: more than a 5-voter round trip should cost", hb, writes, p99, net/float64(writes))
		}
	}
}
