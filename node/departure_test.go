package node

import (
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// A departure mark is the departing incarnation's: a member that left and joined again (a
// rolling restart) may hold replicas and the metadata at once, and a late announcement of
// the incarnation that left does not mark the new one. Before, the mark outlived the
// incarnation by up to departTTL, and the next member to leave in that time found no
// other member to hold its replicas and left at once (e2e TestRotatingKeysWithoutDowntime).
func TestDepartureMarksTheDepartingIncarnation(t *testing.T) {
	c, _ := testCore(t, &recordingEnv{})
	now := c.now
	members := []membership.Member{
		{Node: "a", Incarnation: 1, Status: membership.Up, UpNumber: 1, Voter: true},
		{Node: "b", Incarnation: 2, Status: membership.Up, UpNumber: 2, Voter: true},
	}
	voters := []membership.NodeID{"a", "b"}
	present := func(inc uint64) bool {
		members[1].Incarnation = inc
		return c.placementOf(members, voters, nil).Present("b")
	}
	departs := func(inc uint64) {
		c.shardingEvent(now, wire.ShardingEvent{Kind: pb.ShardingEvent_STORE_DEPARTING, Origin: "b", Incarnation: inc})
	}
	departs(2)
	if present(2) {
		t.Fatal("the departing incarnation may still hold replicas")
	}
	if !present(3) {
		t.Fatal("the incarnation that joined after the departing one left may hold no replica")
	}
	departs(2) // late: gossip brings an announcement of the incarnation that left
	if !present(3) {
		t.Fatal("a late announcement of the incarnation that left marked the new one")
	}
	departs(3)
	if present(3) {
		t.Fatal("the new incarnation departs, and still may hold replicas")
	}
	departs(2)
	if present(3) {
		t.Fatal("a late announcement of an older incarnation cleared the newer one's mark")
	}
	// A member of an earlier version says no incarnation: its mark is any incarnation's.
	c.departs.marks = nil
	departs(0)
	if present(4) {
		t.Fatal("an announcement without an incarnation marked none")
	}
	// Marks expire.
	c.now = now.Add(departTTL)
	if !present(4) {
		t.Fatal("an expired mark still holds")
	}
}
