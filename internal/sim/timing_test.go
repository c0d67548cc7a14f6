package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

// TestFailureDetectionTime checks the acceptance bounds with Akka's default detector:
// a killed member is unreachable on every other member within 5 s, and with keep-majority it
// is downed after stable-after and removed at once: with every member observing it
// unreachable its lease has run out (membership.Node.leaseExpired), and keep-majority needs
// no down-removal-margin.
func TestFailureDetectionTime(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		cfg := membership.DefaultConfig()
		cfg.SplitBrainResolver.StableAfter = 2 * time.Second
		s := convergedCluster(t, seed, cfg, 5, 5, 3*time.Second)
		s.RunFor(time.Duration(5+seed%5) * time.Second)
		victim := 1 + int(seed%5)
		s.Kill(victim)
		killed := s.Now()
		id := s.Node(victim).ID
		allSee := func(status membership.Status, unreachable bool) func() bool {
			return func() bool {
				for _, n := range s.Nodes() {
					if n.Index == victim {
						continue
					}
					m, _ := n.M.Member(id)
					if m.Status < status || (unreachable && !n.M.Unreachable(id)) {
						return false
					}
				}
				return true
			}
		}
		if !s.RunUntil(allSee(membership.Up, true), 5*time.Second) {
			t.Fatalf("seed %d: %s not unreachable everywhere 5 s after kill -9", seed, id)
		}
		detected := s.Now().Sub(killed)
		// Each detector adapts to its peer's history, and they may fire a second or so apart:
		// the decision waits for a view that has been stable for stable-after, so it counts
		// from the last of them.
		everyObserves := func() bool {
			for _, n := range s.Nodes() {
				if n.Index != victim && !observes(n, id) {
					return false
				}
			}
			return true
		}
		if !s.RunUntil(everyObserves, 5*time.Second) {
			t.Fatalf("seed %d: the detectors of the members did not all fire 10 s after kill -9", seed)
		}
		observed := s.Now().Sub(killed)
		// stable-after (2 s) from the last member's detection, then convergence: not the 4 s
		// of a lease after the Down, nor a margin.
		if !s.RunUntil(allSee(membership.Removed, false), 3*time.Second) {
			t.Fatalf("seed %d: %s not removed within stable-after (+1 s) after every detector fired", seed, id)
		}
		t.Logf("seed %d: unreachable after %v, observed by every member after %v, removed after %v", seed, detected.Round(time.Millisecond),
			observed.Round(time.Millisecond), s.Now().Sub(killed).Round(time.Millisecond))
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
	}
}

// TestDownedAtStableAfter: the split-brain resolver downs a killed member stable-after after
// its own view changed, not at the first periodic tick after that (up to a tick interval
// later, which every failover waited for): the member ticks once more when the decision
// falls due (Core.TickDue).
func TestDownedAtStableAfter(t *testing.T) {
	const stableAfter = 2 * time.Second
	for seed := uint64(1); seed <= 10; seed++ {
		cfg := membership.DefaultConfig()
		cfg.SplitBrainResolver.StableAfter = stableAfter
		s := convergedCluster(t, seed, cfg, 3, 3, 3*time.Second)
		s.RunFor(time.Duration(3+seed%3) * time.Second)
		victim := 1 + int(seed%3)
		id := s.Node(victim).ID
		s.Kill(victim)
		// When each member first took the victim for unreachable, until one downs it.
		saw := map[int]time.Time{}
		var downed time.Time
		var decider int
		if !s.RunUntil(func() bool {
			for _, n := range s.Nodes() {
				if n.Index == victim || !n.Alive {
					continue
				}
				if _, ok := saw[n.Index]; !ok && n.M.Unreachable(id) {
					saw[n.Index] = s.Now()
				}
				if m, _ := n.M.Member(id); m.Status >= membership.Down {
					downed, decider = s.Now(), n.Index
					return true
				}
			}
			return false
		}, 15*time.Second) {
			t.Fatalf("seed %d: %s not downed 15 s after kill -9", seed, id)
		}
		waited := downed.Sub(saw[decider])
		if waited < stableAfter || waited > stableAfter+time.Millisecond {
			t.Errorf("seed %d: %s downed by %s %v after its view changed, want stable-after (%v)", seed, id, s.Node(decider).ID, waited, stableAfter)
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
	}
}

// observes reports whether member n's own failure detector finds member id unreachable.
func observes(n *Node, id membership.NodeID) bool {
	for _, r := range n.M.State().Reach {
		if r.Observer == n.ID && slices.Contains(r.Unreachable, id) {
			return true
		}
	}
	return false
}

// TestLeaveSeenQuickly checks that a graceful leave reaches Removed on every member fast
// (the acceptance bound is 2 s on real daemons; here it is milliseconds).
func TestLeaveSeenQuickly(t *testing.T) {
	s := New(Options{Seed: 7, Membership: membership.DefaultConfig()})
	for range 5 {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	for i := 2; i <= 5; i++ {
		s.Start(i, 1)
	}
	if !s.RunUntil(s.Converged, 3*time.Second) {
		t.Fatal("not converged")
	}
	s.RunFor(3 * time.Second)
	s.Leave(3)
	start := s.Now()
	removed := func() bool {
		for _, n := range s.Nodes() {
			if n.Index == 3 {
				continue
			}
			if m, _ := n.M.Member("n03"); m.Status != membership.Removed {
				return false
			}
		}
		return s.Node(3).Stopped != nil
	}
	if !s.RunUntil(removed, 2*time.Second) {
		t.Fatalf("leave not complete within 2 s:\n%s", s.Status())
	}
	t.Logf("removed everywhere and stopped after %v", s.Now().Sub(start))
}

// TestRemovedMemberNoLongerServes: a member the others cannot hear, which still hears them
// (a one-way cut), keeps agreeing with their views — it merges their observation of it —
// until they down it; cut off completely at that moment, it never learns of the Down. The
// members remove it as soon as it is Down (each observes it unreachable, and the removal
// margin is near zero): by then its lease must have run out, which it has because grants
// are dated by the echoed heartbeat, not by their arrival.
func TestRemovedMemberNoLongerServes(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		cfg := membership.DefaultConfig()
		cfg.SplitBrainResolver.StableAfter = time.Second
		cfg.DownRemovalMargin = time.Millisecond
		s := convergedCluster(t, seed, cfg, 5, 5, 3*time.Second)
		s.RunFor(time.Duration(2+seed%3) * time.Second)
		const victim = 5
		id := s.Node(victim).ID
		for i := 1; i < victim; i++ {
			s.Net.Cut(victim, i)
		}
		seen := func(status membership.Status) bool {
			for i := 1; i < victim; i++ {
				if m, _ := s.Node(i).M.Member(id); m.Status >= status {
					return true
				}
			}
			return false
		}
		if !s.RunUntil(func() bool { return seen(membership.Down) }, 20*time.Second) {
			t.Fatalf("seed %d: %s not downed:\n%s", seed, id, s.Status())
		}
		s.Net.Partition([]int{victim})
		removed := false
		for range 1000 {
			s.RunFor(10 * time.Millisecond)
			if seen(membership.Removed) {
				removed = true
				if s.Node(victim).M.Serving(s.Now()) {
					t.Fatalf("seed %d: %s removed while it still serves (until %v, now %v)", seed, id,
						s.Node(victim).M.ServingUntil().Format("15:04:05.000"), s.Now().Format("15:04:05.000"))
				}
			}
		}
		if !removed {
			t.Fatalf("seed %d: %s never removed:\n%s", seed, id, s.Status())
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
	}
}

// TestJoinerServesPromptly: a member that joins serves within a few round trips of becoming
// Up, not a heartbeat interval later: it sends a heartbeat when it sees itself Up, and a
// member echoes at once the first heartbeat it counts from another (lease grants are
// echoes of the grantee's heartbeats; a joiner's earlier ones may have reached members
// that did not know it yet). A shard moved to it waits for that.
func TestJoinerServesPromptly(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		s := convergedCluster(t, seed, membership.DefaultConfig(), 4, 3, 5*time.Second)
		s.RunFor(time.Duration(2+seed%3) * time.Second)
		s.Start(4, 1)
		joiner := s.Node(4)
		up := func() bool { m, _ := s.Node(1).M.Member(joiner.ID); return m.Status == membership.Up }
		if !s.RunUntil(up, 10*time.Second) {
			t.Fatalf("seed %d: the joiner never Up", seed)
		}
		at := s.Now()
		if !s.RunUntil(func() bool { return joiner.M.Serving(s.Now()) }, 200*time.Millisecond) {
			t.Fatalf("seed %d: the joiner does not serve 200 ms after it is Up", seed)
		}
		t.Logf("seed %d: serving %v after Up", seed, s.Now().Sub(at).Round(time.Microsecond))
	}
}

// convergedCluster adds nodes nodes and starts the first started of them, joining through
// the first, and runs until they converge (within the bound).
func convergedCluster(t *testing.T, seed uint64, cfg membership.Config, nodes, started int, within time.Duration) *Sim {
	t.Helper()
	s := New(Options{Seed: seed, Membership: cfg})
	for range nodes {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	for i := 2; i <= started; i++ {
		s.Start(i, 1)
	}
	if !s.RunUntil(s.Converged, within) {
		t.Fatalf("seed %d: not converged within %v:\n%s", seed, within, s.Status())
	}
	return s
}
