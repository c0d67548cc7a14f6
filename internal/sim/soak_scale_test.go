package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

// TestSoakScale is the membership soak at 5, 50 and 500 members with the voters bounded
// (cluster.voters 5, so at 50 and 500 most members grant nothing and keep-majority counts
// voters): partitions into random sides, partitions that cut the voters 3 | 2 whatever the
// sides' sizes, partitions timed to a leader action (Up, Exiting, a removal), kills and
// pauses, under keep-majority, lease-majority (its lease sometimes out of one side's reach),
// keep-oldest and static-quorum. The invariants hold after every delivered message (nothing
// a member removed still runs; a decision that downs others holds its strategy's quorum);
// once a partition has had time to settle only one side runs; after the faults the
// survivors converge. A failure names the size and seed (replay: SHARDMESH_SOAK_SCALE=
// members:seed).
//
// Seeds per size: 100, 8 and 1 (-short: 20, 2 and none); SHARDMESH_SOAK_SCALE_RUNS=a,b,c
// sets them.
func TestSoakScale(t *testing.T) {
	sizes := []struct{ members, runs int }{{5, 100}, {50, 8}, {500, 1}}
	if testing.Short() {
		sizes = []struct{ members, runs int }{{5, 20}, {50, 2}, {500, 0}}
	}
	if v := os.Getenv("SHARDMESH_SOAK_SCALE_RUNS"); v != "" {
		for i, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(f); err == nil && i < len(sizes) {
				sizes[i].runs = n
			}
		}
	}
	if v := os.Getenv("SHARDMESH_SOAK_SCALE"); v != "" { // members:seed, one schedule
		m, sd, _ := strings.Cut(v, ":")
		members, _ := strconv.Atoi(m)
		seed, _ := strconv.ParseUint(sd, 10, 64)
		s, err := scaleSchedule(seed, members, false)
		if err != nil {
			t.Fatalf("%d members, seed %d: %v\ntimeline:\n%s", members, seed, err, strings.Join(s.Timeline(), "\n"))
		}
		return
	}
	for _, size := range sizes {
		start := time.Now()
		var virtual time.Duration
		for seed := uint64(1); seed <= uint64(size.runs); seed++ {
			s, err := scaleSchedule(seed, size.members, size.members > 50)
			virtual += s.Elapsed()
			if err != nil {
				t.Fatalf("%d members, seed %d: %v\nreplay: SHARDMESH_SOAK_SCALE=%d:%d go test ./internal/sim -run TestSoakScale -v\ntimeline (the last 200 lines):\n%s",
					size.members, seed, err, size.members, seed, tail(s.Timeline(), 200))
			}
		}
		if size.runs > 0 {
			t.Logf("%d members: %d schedules, %v of virtual time in %v", size.members, size.runs, virtual.Round(time.Second), time.Since(start).Round(time.Second))
		}
	}
}

func tail(lines []string, n int) string {
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// pollUntil runs s until cond holds, looking every 100 ms of virtual time (cond may cost a
// look at every member), for at most limit.
func pollUntil(s *Sim, cond func() bool, limit time.Duration) bool {
	for end := s.Now().Add(limit); !cond(); s.RunFor(100 * time.Millisecond) {
		if !s.Now().Before(end) || s.Err() != nil {
			return false
		}
	}
	return true
}

// scaleSchedule runs one random schedule on a cluster of members members.
func scaleSchedule(seed uint64, members int, quiet bool) (*Sim, error) {
	r := rand.New(rand.NewPCG(seed, uint64(members)))
	cfg := membership.DefaultConfig()
	sbr := &cfg.SplitBrainResolver
	sbr.StableAfter = time.Duration(2+r.IntN(4)) * time.Second
	cutLease := false
	switch r.IntN(5) {
	case 0:
		sbr.ActiveStrategy = membership.KeepOldest
	case 1:
		sbr.ActiveStrategy = membership.StaticQuorum
		sbr.QuorumSize = members/2 + 1
	case 2:
		sbr.ActiveStrategy = membership.LeaseMajority
		cutLease = r.IntN(2) == 0
	}
	s := New(Options{Seed: seed, Membership: cfg, Quiet: quiet})
	s.Net.Loss = []float64{0, 0, 0.01}[r.IntN(3)]
	s.Net.MaxLatency = []time.Duration{2 * time.Millisecond, 20 * time.Millisecond}[r.IntN(2)]
	s.logf("%d members, %s (quorum %d), stable-after %v, loss %v, latency up to %v",
		members, sbr.ActiveStrategy, sbr.QuorumSize, sbr.StableAfter, s.Net.Loss, s.Net.MaxLatency)

	for range members {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	for i := 2; i <= members; i++ {
		s.Start(i, slices.DeleteFunc([]int{1, 2, 3}, func(sd int) bool { return sd >= i })...)
		if i%100 == 0 {
			s.RunFor(time.Second)
		}
	}
	if !pollUntil(s, s.OneView, 60*time.Second) {
		return s, fmt.Errorf("the cluster did not form: %v", s.Err())
	}

	detect := cfg.FailureDetector.AcceptableHeartbeatPause + 5*cfg.FailureDetector.HeartbeatInterval
	settle := 2*(detect+sbr.StableAfter) + cfg.DownRemovalMargin + 10*time.Second
	running := s.Running
	pick := func(from []int) int { return from[r.IntN(len(from))] }
	// sides splits the members in two: at random, or so that the second side has 2 or 3 of
	// the voters (the first the others) whatever its size.
	sides := func(byVoters bool) (a, b []int) {
		side := map[int]int{} // the voters' sides
		if byVoters {
			vs := s.votersOf()
			r.Shuffle(len(vs), func(i, j int) { vs[i], vs[j] = vs[j], vs[i] })
			for i, v := range vs {
				side[v] = 1
				if i < 2+r.IntN(2) {
					side[v] = 2
				}
			}
		}
		share := 0.1 + 0.8*r.Float64()
		for _, n := range s.Nodes() {
			switch {
			case side[n.Index] == 2 || (side[n.Index] == 0 && r.Float64() < share):
				b = append(b, n.Index)
			default:
				a = append(a, n.Index)
			}
		}
		return a, b
	}
	partition := func(a, b []int) {
		if cutLease {
			s.CutResolverLease([][]int{a, b}[r.IntN(2)]...)
		}
		s.RunFor(settle)
		if err := s.RunningSidesConnected(); err != nil {
			s.fail("%v after the partition held %v", err, settle)
		}
		s.logf("heal")
		s.Net.Heal()
		s.CutResolverLease()
	}

	for step := 0; step < 2+r.IntN(3); step++ {
		live := running()
		if len(live) < 2 {
			break
		}
		switch k := r.IntN(6); k {
		case 0: // kill one to three members
			for range 1 + r.IntN(3) {
				if live = running(); len(live) > 1 {
					s.Kill(pick(live))
				}
			}
		case 1, 2: // random sides, or the voters cut 3 | 2
			a, b := sides(k == 2)
			s.logf("partition: %d | %d members", len(a), len(b))
			s.Net.Partition(a, b)
			partition(a, b)
		case 3: // at a leader action
			a, b := sides(r.IntN(2) == 0)
			s.logf("partition %d | %d members at the next leader action", len(a), len(b))
			partitionAtLeaderAction(s, r, a, b)
			partition(a, b)
		case 4: // a pause, long or short
			n := pick(live)
			s.Pause(n)
			s.RunFor(time.Duration(r.Int64N(int64(2 * settle / 3))))
			s.Resume(n)
		default: // the dead restart
			for _, n := range s.Nodes() {
				if !n.Alive && len(live) > 0 {
					s.Start(n.Index, pick(live))
				}
			}
		}
		s.RunFor(time.Duration(r.Int64N(int64(10 * time.Second))))
		if s.Err() != nil {
			return s, s.Err()
		}
	}

	s.logf("heal, resume all, and settle")
	s.Net.Heal()
	s.Net.Loss = 0
	for _, n := range s.Nodes() {
		if n.Paused {
			s.Resume(n.Index)
		}
	}
	done := func() bool { return len(running()) == 0 || s.OneView() }
	if !pollUntil(s, done, settle+30*time.Second) {
		if s.Err() != nil {
			return s, s.Err()
		}
		return s, fmt.Errorf("survivors did not converge within %v after healing:\n%s", settle+30*time.Second, s.Status())
	}
	return s, s.Err()
}

// votersOf returns the node indexes of the voters as the first running member sees them.
func (s *Sim) votersOf() []int {
	for _, n := range s.Nodes() {
		if !n.Running() {
			continue
		}
		var out []int
		for _, m := range n.M.Members() {
			if o := s.byID[m.Node]; m.Voter && m.Status != membership.Removed && o != nil {
				out = append(out, o.Index)
			}
		}
		return out
	}
	return nil
}
