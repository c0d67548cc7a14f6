package allocation

import (
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

func rollingStrategy(t *testing.T) LeastShard {
	t.Helper()
	s, err := NewLeastShard(LeastShardConfig{RebalanceAbsoluteLimit: 20, RebalanceRelativeLimit: 1, RollingUpdateMoves: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func region(node string, version membership.Version, up uint64, shards ...shard.ID) Region {
	return Region{Node: membership.NodeID(node), Status: membership.Up, AppVersion: version, UpNumber: up, Shards: shards}
}

func TestRollingUpdateMovesOnlyOffOldVersionsUpToTheShare(t *testing.T) {
	s := rollingStrategy(t)
	v := View{Regions: []Region{
		region("a", "1", 1, "1", "2", "3", "4", "5"),
		region("b", "1", 2, "6", "7", "8", "9", "10"),
		region("c", "2", 4),
	}}
	// 10 shards on 3 regions: a share of 4; the new region takes 4, from the old ones only.
	moves := Plan(s, v)
	if len(moves) != 4 {
		t.Fatalf("moves %+v, want 4", moves)
	}
	for _, m := range moves {
		if m.From == "c" || m.To != "c" {
			t.Errorf("move %+v: not from an old version to the new one", m)
		}
	}
	// Two new-version regions at their share: nothing moves, not even to balance them.
	v = View{Regions: []Region{
		region("a", "1", 1, "1", "2"),
		region("c", "2", 4, "3", "4", "5", "6", "7"),
		region("d", "2", 5, "8", "9", "10", "11"),
	}}
	if got := s.Rebalance(v); len(got) != 0 {
		t.Fatalf("moved %v while the new regions hold their share", got)
	}
	// An unreachable member does not stop a rolling update round; a joining one does.
	v = View{Regions: []Region{region("a", "1", 1, "1", "2", "3", "4"), region("c", "2", 4)}, MemberUnreachable: true}
	if got := s.Rebalance(v); len(got) != 2 {
		t.Fatalf("with a member unreachable: %v, want 2 moves", got)
	}
	v.MemberJoining = true
	if got := s.Rebalance(v); len(got) != 0 {
		t.Fatalf("with a member joining: %v", got)
	}
}

func TestWithoutRollingUpdateMovesNothingMovesWhileVersionsAreMixed(t *testing.T) {
	s, err := NewLeastShard(LeastShardConfig{RebalanceAbsoluteLimit: 20, RebalanceRelativeLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	v := View{Regions: []Region{region("a", "1", 1, "1", "2", "3", "4", "5"), region("c", "2", 4)}}
	if got := s.Rebalance(v); len(got) != 0 {
		t.Fatalf("Akka's rule: no rebalance during a rolling update; moved %v", got)
	}
	if to := s.Allocate("a", "9", v); to != "c" {
		t.Fatalf("a new shard went to %s, not the newest version", to)
	}
}
