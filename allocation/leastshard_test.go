package allocation

import (
	"slices"
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// The cases of Akka's LeastShardAllocationStrategySpec (the new algorithm), with the same
// shards picked and the same counts after the shards are allocated again.
func TestLeastShardNewAlgorithmAkkaCases(t *testing.T) {
	tests := []struct {
		name       string
		cfg        LeastShardConfig // zero: unlimited
		view       View
		want       []shard.ID
		wantCounts []int // after Plan, per region A, B, C
	}{
		{name: "[1, 2, 0]", view: abc(1, 2, 0), want: ids(2, 1), wantCounts: []int{1, 1, 1}},
		{name: "[2, 0, 0]", view: abc(2, 0, 0), want: ids(1, 1), wantCounts: []int{1, 1, 0}},
		{name: "[1, 1, 0] is balanced", view: abc(1, 1, 0), want: nil, wantCounts: []int{1, 1, 0}},
		{name: "[3, 0, 0]", view: abc(3, 0, 0), want: ids(1, 2), wantCounts: []int{1, 1, 1}},
		{name: "[4, 4, 0]", view: abc(4, 4, 0), want: []shard.ID{"001", "005"}, wantCounts: []int{3, 3, 2}},
		{name: "[4, 4, 2] phase 2", view: abc(4, 4, 2), want: ids(1, 1), wantCounts: []int{3, 4, 3}},
		{name: "[5, 5, 0] round 1", view: abc(5, 5, 0), want: []shard.ID{"001", "006"}, wantCounts: []int{4, 4, 2}},
		{name: "[50, 0, 50] round 1", view: abc(50, 0, 50),
			want: append(ids(1, 16), ids(51, 16)...), wantCounts: []int{34, 32, 34}},
		{name: "absolute limit", cfg: LeastShardConfig{RebalanceAbsoluteLimit: 3, RebalanceRelativeLimit: 1},
			view: abc(1, 9, 0), want: ids(2, 3), wantCounts: []int{2, 6, 2}},
		{name: "relative limit", cfg: LeastShardConfig{RebalanceAbsoluteLimit: 5, RebalanceRelativeLimit: 0.3},
			view: abc(1, 9, 0), want: ids(2, 3), wantCounts: []int{2, 6, 2}},
		{name: "limit is at least one", cfg: LeastShardConfig{RebalanceAbsoluteLimit: 5, RebalanceRelativeLimit: 0.01},
			view: abc(1, 9, 0), want: ids(2, 1), wantCounts: []int{1, 8, 1}},
		{name: "nothing while a rebalance is in progress", view: withInProgress(abc(10, 0, 0), "002", "003"),
			want: nil, wantCounts: []int{10, 0, 0}},
		{name: "nothing when an in-progress shard is not in the view", view: withInProgress(abc(10, 0, 0), "999"),
			want: nil, wantCounts: []int{10, 0, 0}},
		{name: "no shards", view: abc(0, 0, 0), want: nil, wantCounts: []int{0, 0, 0}},
		{name: "no regions", view: View{}, want: nil, wantCounts: []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := unlimited(t)
			if tt.cfg != (LeastShardConfig{}) {
				s = newLeastShard(t, tt.cfg)
			}
			got := s.Rebalance(tt.view)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Rebalance = %v, want %v", got, tt.want)
			}
			_, after := plan(s, tt.view)
			if c := counts(after); !slices.Equal(c, tt.wantCounts) {
				t.Fatalf("counts after the round = %v, want %v", c, tt.wantCounts)
			}
		})
	}
}

// Akka's multi-round cases: phase 1 then phase 2 reach the optimal balance in two rounds.
func TestLeastShardNewAlgorithmSecondRound(t *testing.T) {
	tests := []struct {
		name           string
		view           View
		want1, want2   []shard.ID
		after1, after2 []int
	}{
		{name: "[5, 5, 0]", view: abc(5, 5, 0),
			want1: []shard.ID{"001", "006"}, after1: []int{4, 4, 2},
			want2: []shard.ID{"002"}, after2: []int{3, 4, 3}},
		{name: "[50, 0, 50]", view: abc(50, 0, 50),
			want1: append(ids(1, 16), ids(51, 16)...), after1: []int{34, 32, 34},
			want2: []shard.ID{"017"}, after2: []int{33, 33, 34}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := unlimited(t)
			v := tt.view
			for round, want := range [][]shard.ID{tt.want1, tt.want2} {
				if got := s.Rebalance(v); !slices.Equal(got, want) {
					t.Fatalf("round %d: Rebalance = %v, want %v", round+1, got, want)
				}
				_, v = plan(s, v)
				if wantCounts := [][]int{tt.after1, tt.after2}[round]; !slices.Equal(counts(v), wantCounts) {
					t.Fatalf("round %d: counts = %v, want %v", round+1, counts(v), wantCounts)
				}
			}
			if got := s.Rebalance(v); got != nil {
				t.Fatalf("round 3: Rebalance = %v on a balanced view, want nothing", got)
			}
		})
	}
}

// A new member takes its share from the members with the most shards, the oldest shards
// first, in one round.
func TestLeastShardNewMemberTakesFromTheMost(t *testing.T) {
	v := View{Regions: []Region{
		{Node: "old1", Status: membership.Up, UpNumber: 1, Shards: ids(1, 40)},
		{Node: "old2", Status: membership.Up, UpNumber: 2, Shards: ids(41, 30)},
		{Node: "old3", Status: membership.Up, UpNumber: 3, Shards: ids(71, 30)},
		{Node: "new", Status: membership.Up, UpNumber: 4},
	}}
	s := unlimited(t)
	moves := Plan(s, v)
	// optimal = 25: old1 gives 15, old2 and old3 give 5 each; all to the new member except
	// what the rounding leaves.
	want := map[membership.NodeID]int{"old1": 15, "old2": 5, "old3": 5}
	got := map[membership.NodeID]int{}
	for _, m := range moves {
		got[m.From]++
		if m.To != "new" {
			t.Errorf("move %v: want it on the new member", m)
		}
	}
	for from, n := range want {
		if got[from] != n {
			t.Errorf("%s gives %d shards, want %d (moves %v)", from, got[from], n, moves)
		}
	}
	// old2 and old3 tie on count; old2 is older, so it comes first and gives its oldest.
	if moves[0].Shard != "041" {
		t.Errorf("first move %v: want 041, the oldest shard of the least loaded overloaded region", moves[0])
	}
	_, after := plan(s, v)
	if !slices.Equal(counts(after), []int{25, 25, 25, 25}) {
		t.Errorf("counts after = %v, want [25 25 25 25]", counts(after))
	}
}

func TestLeastShardNoRebalanceWhenNotAGoodTime(t *testing.T) {
	rolling := abc(5, 5, 0)
	rolling.Regions[1].AppVersion = "1.0.1"
	joiningRegion := abc(5, 5, 0)
	joiningRegion.Regions[2].Status = membership.Joining
	joiningMember := abc(5, 5, 0)
	joiningMember.MemberJoining = true
	unreachable := abc(5, 5, 0)
	unreachable.MemberUnreachable = true
	views := map[string]View{
		"rolling update":                rolling,
		"region joining":                joiningRegion,
		"member without region joining": joiningMember,
		"member unreachable":            unreachable,
	}
	strategies := map[string]LeastShard{
		"new": unlimited(t),
		"old": oldAlgorithm(t, 2, 100),
	}
	for vn, v := range views {
		for sn, s := range strategies {
			for _, in := range [][]shard.ID{nil, {"001", "002"}} {
				if got := s.Rebalance(withInProgress(v, in...)); got != nil {
					t.Errorf("%s, %s algorithm, in progress %v: Rebalance = %v, want nothing", vn, sn, in, got)
				}
			}
		}
	}
	// The same views with everything settled do rebalance: the checks above are not vacuous.
	for sn, s := range strategies {
		if got := s.Rebalance(abc(5, 5, 0)); got == nil {
			t.Errorf("%s algorithm: settled view not rebalanced", sn)
		}
	}
}

// Allocation prefers regions not on their way out, then the newest app version, then the
// fewest shards, then the oldest member, then the lowest node id.
func TestLeastShardAllocate(t *testing.T) {
	region := func(node string, st membership.Status, ver membership.Version, up uint64, n int) Region {
		return Region{Node: membership.NodeID(node), Status: st, AppVersion: ver, UpNumber: up, Shards: ids(1, n)}
	}
	tests := []struct {
		name    string
		regions []Region
		want    membership.NodeID
	}{
		{"least shards", []Region{
			region("a", membership.Up, "1", 1, 1), region("b", membership.Up, "1", 2, 1), region("c", membership.Up, "1", 3, 0),
		}, "c"},
		{"leaving avoided despite fewer shards", []Region{
			region("a", membership.Up, "1", 1, 9), region("b", membership.Leaving, "1", 2, 0),
		}, "a"},
		{"exiting and down avoided", []Region{
			region("a", membership.Exiting, "1", 1, 0), region("b", membership.Down, "1", 2, 0), region("c", membership.Up, "1", 3, 5),
		}, "c"},
		{"leaving when nothing else", []Region{
			region("a", membership.Leaving, "1", 1, 3), region("b", membership.Exiting, "1", 2, 2),
		}, "b"},
		{"newest version despite more shards", []Region{
			region("a", membership.Up, "1.9.0", 1, 0), region("b", membership.Up, "1.10.0", 2, 7),
		}, "b"},
		{"leaving newest version avoided", []Region{
			region("a", membership.Up, "1.0.0", 1, 5), region("b", membership.Leaving, "2.0.0", 2, 0),
		}, "a"},
		{"joining newest version preferred (Akka stops at the status here)", []Region{
			region("a", membership.Up, "1.0.0", 1, 0), region("b", membership.Joining, "2.0.0", 0, 3),
		}, "b"},
		{"tie: oldest member", []Region{
			region("z", membership.Up, "1", 2, 1), region("y", membership.Up, "1", 1, 1),
		}, "y"},
		{"tie: not yet Up is youngest", []Region{
			region("a", membership.Joining, "1", 0, 1), region("b", membership.Up, "1", 7, 1),
		}, "b"},
		{"tie: node id", []Region{
			region("n2", membership.Up, "1", 5, 1), region("n1", membership.Up, "1", 5, 1),
		}, "n1"},
		{"no regions", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range []LeastShard{unlimited(t), oldAlgorithm(t, 1, 3)} {
				v := View{Regions: tt.regions}
				if got := s.Allocate("a", "new-shard", v); got != tt.want {
					t.Fatalf("%v: Allocate = %q, want %q", s, got, tt.want)
				}
				// The order of the regions in the view plays no part.
				slices.Reverse(v.Regions)
				if got := s.Allocate("a", "new-shard", v); got != tt.want {
					t.Fatalf("%v, regions reversed: Allocate = %q, want %q", s, got, tt.want)
				}
			}
		})
	}
}

// Akka's "prefer least shards, latest version, non downed, leaving or exiting nodes".
func TestSuitabilityOrder(t *testing.T) {
	v := View{Regions: []Region{
		{Node: "fewest", Status: membership.Up, AppVersion: "1.0.1", UpNumber: 3},
		{Node: "leaving", Status: membership.Leaving, AppVersion: "1.0.0", UpNumber: 2},
		{Node: "most", Status: membership.Up, AppVersion: "1.0.1", UpNumber: 5, Shards: []shard.ID{"ShardId2", "ShardId3"}},
		{Node: "oldapp", Status: membership.Up, AppVersion: "1.0.0", UpNumber: 1},
		{Node: "oneshard", Status: membership.Up, AppVersion: "1.0.1", UpNumber: 4, Shards: []shard.ID{"ShardId1"}},
	}}
	var got []membership.NodeID
	for _, i := range sortedBySuitability(v.Regions) {
		got = append(got, v.Regions[i].Node)
	}
	want := []membership.NodeID{"fewest", "oneshard", "most", "oldapp", "leaving"}
	if !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

// Shardcake's rule: no move between regions that differ by one, nor back to the same
// region. With a Leaving region the Akka algorithm counts it in the optimum but allocation
// avoids it, so without the rule shards are handed off only to come back.
func TestLeastShardSkipDifferenceOfOne(t *testing.T) {
	leavingView := func(a, b, l int) View {
		return View{Regions: []Region{
			{Node: "A", Status: membership.Up, UpNumber: 1, Shards: ids(1, a)},
			{Node: "B", Status: membership.Up, UpNumber: 2, Shards: ids(1+a, b)},
			{Node: "L", Status: membership.Leaving, UpNumber: 3, Shards: ids(1+a+b, l)},
		}}
	}
	tests := []struct {
		name       string
		view       View
		akka, skip []Move
	}{
		{
			name: "[5, 4, leaving 0]: Akka moves three shards back where they were",
			view: leavingView(5, 4, 0),
			akka: []Move{{"006", "B", "B"}, {"001", "A", "A"}, {"002", "A", "A"}},
			skip: nil,
		},
		{
			name: "[6, 2, leaving 1]: the third shard would only swap the imbalance",
			view: leavingView(6, 2, 1),
			akka: []Move{{"001", "A", "B"}, {"002", "A", "B"}, {"003", "A", "A"}},
			skip: []Move{{"001", "A", "B"}, {"002", "A", "B"}},
		},
		{
			name: "[4, 4, 0]: nothing to skip",
			view: abc(4, 4, 0),
			akka: []Move{{"001", "A", "C"}, {"005", "B", "C"}},
			skip: []Move{{"001", "A", "C"}, {"005", "B", "C"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			akka := unlimited(t)
			cfg := akka.Config()
			cfg.SkipDifferenceOfOne = true
			skip := newLeastShard(t, cfg)
			if got := Plan(akka, tt.view); !slices.Equal(got, tt.akka) {
				t.Errorf("without the rule: Plan = %v, want %v", got, tt.akka)
			}
			if got := Plan(skip, tt.view); !slices.Equal(got, tt.skip) {
				t.Errorf("with the rule: Plan = %v, want %v", got, tt.skip)
			}
		})
	}
}
