package allocation

import (
	"slices"
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// The cases of Akka's DeprecatedLeastShardAllocationStrategySpec: each row is one call of
// Rebalance with the shards of earlier rounds still in progress.
func TestLeastShardOldAlgorithmAkkaCases(t *testing.T) {
	type call struct {
		inProgress []shard.ID
		want       []shard.ID
	}
	tests := []struct {
		name                       string
		threshold, maxSimultaneous int
		view                       View
		calls                      []call
	}{
		{"[2, 0, 0] threshold 1", 1, 10, abc(2, 0, 0), []call{
			{nil, []shard.ID{"001"}},
			{[]shard.ID{"001"}, nil},
		}},
		{"[1, 1, 0] threshold 1: difference equal to threshold", 1, 10, abc(1, 1, 0), []call{
			{nil, nil},
		}},
		{"[1, 2, 0] threshold 1", 1, 10, abc(1, 2, 0), []call{
			{nil, []shard.ID{"002"}},
			{[]shard.ID{"002"}, nil},
		}},
		{"[3, 0, 0] threshold 1", 1, 10, abc(3, 0, 0), []call{
			{nil, []shard.ID{"001"}},
			{[]shard.ID{"001"}, []shard.ID{"002"}},
		}},
		{"[4, 4, 0] threshold 1", 1, 10, abc(4, 4, 0), []call{
			{nil, []shard.ID{"001"}},
			{[]shard.ID{"001"}, []shard.ID{"005"}},
		}},
		{"[4, 4, 2] threshold 1", 1, 10, abc(4, 4, 2), []call{
			{nil, []shard.ID{"001"}},
			// Not optimal, 005 is stopped and started again, but as Akka.
			{[]shard.ID{"001"}, []shard.ID{"005"}},
		}},
		{"[1, 2, 0] threshold 2: difference not above threshold", 2, 10, abc(1, 2, 0), []call{
			{nil, nil},
		}},
		{"[1, 3, 0] threshold 2", 2, 10, abc(1, 3, 0), []call{
			{nil, []shard.ID{"002"}},
			{[]shard.ID{"002"}, nil},
		}},
		{"[2, 2, 0] threshold 2: difference equal to threshold", 2, 10, abc(2, 2, 0), []call{
			{nil, nil},
		}},
		{"[3, 3, 0] threshold 2", 2, 10, abc(3, 3, 0), []call{
			{nil, []shard.ID{"001"}},
			{[]shard.ID{"001"}, []shard.ID{"004"}},
			{[]shard.ID{"001", "004"}, nil},
		}},
		{"[4, 4, 0] threshold 2", 2, 10, abc(4, 4, 0), []call{
			{nil, []shard.ID{"001", "002"}},
			{[]shard.ID{"001", "002"}, []shard.ID{"005", "006"}},
			{[]shard.ID{"001", "002", "005", "006"}, nil},
		}},
		{"[5, 5, 0] threshold 2", 2, 10, abc(5, 5, 0), []call{
			{nil, []shard.ID{"001", "002"}},
			// If 001 and 002 do not start quickly enough this stops more than optimal, as Akka.
			{[]shard.ID{"001", "002"}, []shard.ID{"006", "007"}},
			{[]shard.ID{"001", "002", "006", "007"}, []shard.ID{"003"}},
		}},
		{"[50, 0, 50] threshold 2", 2, 100, abc(50, 0, 50), []call{
			{nil, []shard.ID{"001", "002"}},
			{[]shard.ID{"001", "002"}, []shard.ID{"051", "052"}},
			{[]shard.ID{"001", "002", "051", "052"}, []shard.ID{"003", "004"}},
		}},
		{"max simultaneous rebalance", 3, 2, abc(1, 10, 0), []call{
			{nil, []shard.ID{"002", "003"}},
			{[]shard.ID{"002", "003"}, nil},
		}},
		{"in-progress shards are not picked", 3, 4, abc(10, 0, 0), []call{
			{[]shard.ID{"002", "003"}, []shard.ID{"001", "004"}},
		}},
		{"in-progress shards outside the view take slots", 3, 2, abc(10, 0, 0), []call{
			{[]shard.ID{"998", "999"}, nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := oldAlgorithm(t, tt.threshold, tt.maxSimultaneous)
			for i, c := range tt.calls {
				if got := s.Rebalance(withInProgress(tt.view, c.inProgress...)); !slices.Equal(got, c.want) {
					t.Fatalf("call %d, in progress %v: Rebalance = %v, want %v", i+1, c.inProgress, got, c.want)
				}
			}
		})
	}
}

// The old algorithm picks shards in id order (Java string order), not allocation order, and
// measures the difference against the most suitable region, not the one with fewest shards.
func TestLeastShardOldAlgorithmDetails(t *testing.T) {
	s := oldAlgorithm(t, 1, 3)
	v := View{Regions: []Region{
		{Node: "A", Status: membership.Up, UpNumber: 1, Shards: []shard.ID{"9", "10", "2"}},
		{Node: "B", Status: membership.Up, UpNumber: 2, Shards: []shard.ID{"5"}},
	}}
	if got := s.Rebalance(v); !slices.Equal(got, []shard.ID{"10"}) {
		t.Errorf("Rebalance = %v, want [10] (\"10\" < \"2\" < \"9\")", got)
	}
	// A leaving region holding no shards is not the yardstick: B is.
	v.Regions = append(v.Regions, Region{Node: "L", Status: membership.Leaving, UpNumber: 3})
	if got := s.Rebalance(v); !slices.Equal(got, []shard.ID{"10"}) {
		t.Errorf("with an empty leaving region: Rebalance = %v, want [10]", got)
	}
	v.Regions[0].Shards = v.Regions[0].Shards[:2]
	if got := s.Rebalance(v); got != nil {
		t.Errorf("[2, 1, leaving 0]: Rebalance = %v, want nothing (B is the yardstick)", got)
	}
}

// Convergence of the old algorithm: repeated rounds end with max − min ≤ threshold, and then
// it stops picking.
func TestLeastShardOldAlgorithmConverges(t *testing.T) {
	for _, threshold := range []int{1, 2, 5} {
		s := oldAlgorithm(t, threshold, 3)
		v := abc(97, 3, 0)
		rounds := 0
		for ; rounds < 200; rounds++ {
			moves, next := plan(s, v)
			if len(moves) == 0 {
				break
			}
			v = next
		}
		if d := spread(v); d > threshold {
			t.Errorf("threshold %d: stopped after %d rounds at %v, spread %d", threshold, rounds, counts(v), d)
		}
		t.Logf("threshold %d: %d rounds to %v", threshold, rounds, counts(v))
	}
}
