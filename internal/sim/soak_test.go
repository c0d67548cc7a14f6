package sim

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

var (
	soakRuns  = flag.Int("soak.runs", 1000, "random schedules TestSoak runs (-short: 100)")
	soakSeed  = flag.Uint64("soak.seed", 0, "run only this schedule seed (replay a failure)")
	soakFirst = flag.Uint64("soak.first", 1, "the first schedule seed TestSoak runs (explore beyond CI's 1..1000)")
)

// TestSoak runs random schedules of joins, kills, restarts, pauses, graceful leaves, operator
// downs and partitions on lossy, reordering, duplicating networks, with the invariants checked
// after every delivered message. After the faults, the network heals and the surviving
// members must converge. A failure prints the seed (replay with -soak.seed=N) and the
// timeline.
func TestSoak(t *testing.T) {
	runs := *soakRuns
	runs = shortRuns(runs, 100, 20)
	if v := os.Getenv("SHARDMESH_SOAK_RUNS"); v != "" {
		runs, _ = strconv.Atoi(v)
	}
	first := *soakFirst
	if *soakSeed != 0 {
		first, runs = *soakSeed, 1
	}
	var messages int
	var virtual time.Duration
	for seed := first; seed < first+uint64(runs); seed++ {
		s, err := soakSchedule(seed, true)
		messages += s.Delivered
		virtual += s.Elapsed()
		if err != nil {
			t.Fatalf("schedule seed %d failed: %v\nreplay: go test ./internal/sim -run TestSoak -soak.seed=%d -v\ntimeline:\n%s",
				seed, err, seed, strings.Join(s.Timeline(), "\n"))
		}
	}
	t.Logf("%d schedules, %v of virtual time, %d messages delivered, invariants checked after each", runs, virtual, messages)
}

// foundSeeds are schedules beyond CI's 1..1000 that once broke an invariant, each fixed since:
// they run with every test run (docs/chaos.md, Findings). timed: found with partitions
// timed to leader actions (the first three were found before the soak had them).
var foundSeeds = []struct {
	seed  uint64
	timed bool
}{
	{2289, false}, // an operator's down racing a partition: both sides won keep-majority
	{6055, false}, // keep-oldest: the downed majority kept its own lease past its removal
	{6284, false}, // a graceful leave racing a partition: Leaving on one side, Exiting on the other
	{4755, true},  // keep-oldest: a member admitted after the partition counted on one side only
}

// TestSoakFoundSeeds replays foundSeeds.
func TestSoakFoundSeeds(t *testing.T) {
	for _, f := range foundSeeds {
		if s, err := soakSchedule(f.seed, f.timed); err != nil {
			t.Errorf("schedule seed %d failed: %v\ntimeline:\n%s", f.seed, err, strings.Join(s.Timeline(), "\n"))
		}
	}
}

// soakSchedule runs one random schedule. With timed, half of its partitions fall at the
// instant a leader takes an action (Joining → Up, Leaving → Exiting, a removal) that the
// schedule provokes, the moment when the two sides' views differ most (issue 25); their
// draws come from a stream of their own, so the other draws of a seed stay as they were.
func soakSchedule(seed uint64, timed bool) (*Sim, error) {
	r := rand.New(rand.NewPCG(seed, 0xfa17))
	rt := rand.New(rand.NewPCG(seed, 0x7137ed))
	cfg := membership.DefaultConfig()
	cfg.SplitBrainResolver.StableAfter = time.Duration(2+r.IntN(4)) * time.Second
	switch r.IntN(6) {
	case 0:
		cfg.SplitBrainResolver.ActiveStrategy = membership.KeepOldest
	case 1:
		cfg.SplitBrainResolver.ActiveStrategy = membership.StaticQuorum
		cfg.SplitBrainResolver.QuorumSize = 3
	}
	s := New(Options{Seed: seed, Membership: cfg})
	s.Net.Loss = []float64{0, 0, 0.01, 0.05}[r.IntN(4)]
	s.Net.Duplicate = []float64{0, 0.01}[r.IntN(2)]
	s.Net.MaxLatency = []time.Duration{2 * time.Millisecond, 20 * time.Millisecond, 200 * time.Millisecond}[r.IntN(3)]

	size := 3 + r.IntN(5)
	for range size {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	for i := 2; i <= size; i++ {
		s.Start(i, 1+r.IntN(i-1))
	}
	s.RunFor(3 * time.Second)

	// Liveness bound for "after a partition, only one side runs": detection (phi adapts to each
	// peer's history; allow for outliers), stable-after, and once more for the cascade when
	// the losing side's members stop one by one, plus the removal margin.
	detect := cfg.FailureDetector.AcceptableHeartbeatPause + 5*cfg.FailureDetector.HeartbeatInterval
	settle := 2*(detect+cfg.SplitBrainResolver.StableAfter) + cfg.DownRemovalMargin
	running := s.Running
	pick := func(from []int) int { return from[r.IntN(len(from))] }

	for step := 0; step < 8+r.IntN(8); step++ {
		live := running()
		var dead, paused []int
		for _, n := range s.Nodes() {
			switch {
			case n.Paused && n.Alive:
				paused = append(paused, n.Index)
			case !n.Alive:
				dead = append(dead, n.Index)
			}
		}
		switch k := r.IntN(10); {
		case k == 0 && len(live) > 1:
			s.Kill(pick(live))
		case k == 1 && len(dead) > 0 && len(live) > 0:
			s.Start(pick(dead), pick(live))
		case k == 2 && len(live) > 0 && len(s.Nodes()) < 9:
			n := s.AddNode(nil, "1")
			s.Start(n.Index, pick(live))
		case k == 3 && len(live) > 1:
			s.Pause(pick(live))
		case k == 4 && len(paused) > 0:
			s.Resume(pick(paused))
		case k == 5 && len(live) > 1:
			s.Leave(pick(live))
		case k == 6 && len(live) > 2:
			by, target := pick(live), pick(live)
			if by != target {
				s.Down(by, target)
			}
		case k == 7 || k == 8:
			var a, b []int
			for _, n := range s.Nodes() {
				if r.IntN(2) == 0 {
					a = append(a, n.Index)
				} else {
					b = append(b, n.Index)
				}
			}
			if timed && rt.IntN(2) == 0 {
				partitionAtLeaderAction(s, rt, a, b)
			} else {
				s.logf("partition %v / %v", a, b)
				s.Net.Partition(a, b)
			}
			s.RunFor(settle)
			if err := s.RunningSidesConnected(); err != nil {
				s.fail("%v after the partition held %v", err, settle)
			}
		default:
			s.logf("heal")
			s.Net.Heal()
		}
		s.RunFor(time.Duration(r.Int64N(int64(12 * time.Second))))
		if s.Err() != nil {
			return s, s.Err()
		}
	}

	// Heal everything and let the survivors settle: they must converge.
	s.logf("heal, resume all, and settle")
	s.Net.Heal()
	s.Net.Loss, s.Net.Duplicate = 0, 0
	for _, n := range s.Nodes() {
		if n.Paused {
			s.Resume(n.Index)
		}
	}
	// Converged, or every member stopped by the strategy's rules (keep-majority stops both
	// sides of a tie it cannot break in their favour, static-quorum every side below quorum).
	done := func() bool { return len(running()) == 0 || s.Converged() }
	if !s.RunUntil(done, settle+10*time.Second) {
		return s, fmt.Errorf("survivors did not converge within %v after healing:\n%s", settle+10*time.Second, s.Status())
	}
	return s, s.Err()
}

// partitionAtLeaderAction arms a partition into a and b for the next leader action of a
// random kind, provokes that action (a member joins, leaves, or is killed so that it is
// downed and removed), and runs until the partition has fallen or the action did not come.
func partitionAtLeaderAction(s *Sim, r *rand.Rand, a, b []int) {
	var live, dead []int
	for _, n := range s.Nodes() {
		switch {
		case n.Running():
			live = append(live, n.Index)
		case !n.Alive:
			dead = append(dead, n.Index)
		}
	}
	if len(live) < 2 {
		s.Net.Partition(a, b)
		return
	}
	action := []LeaderAction{ActionUp, ActionExiting, ActionRemoved}[r.IntN(3)]
	s.PartitionAtLeaderAction(action, 0, a, b)
	s.logf("armed: partition %v / %v at the next %s", a, b, action)
	pick := func(from []int) int { return from[r.IntN(len(from))] }
	switch {
	case action == ActionUp && len(dead) > 0:
		s.Start(pick(dead), pick(live))
	case action == ActionUp && len(s.Nodes()) < 9:
		n := s.AddNode(nil, "1")
		s.Start(n.Index, pick(live))
	case action == ActionRemoved && r.IntN(2) == 0:
		s.Kill(pick(live))
	default: // Exiting, and Removed after it
		s.Leave(pick(live))
	}
	if !s.RunUntil(s.Fired, 40*time.Second) {
		s.logf("the armed partition did not fall; partitioning now")
		s.trigger = nil
		s.Net.Partition(a, b)
	}
}
