package node

import (
	"testing"

	libp2ptest "github.com/libp2p/go-libp2p/core/test"

	"github.com/shardmesh/shardmesh/membership"
)

// The store's replicas are the same slice while the members that count do not change, and
// follow every change: a member leaving drops out, a new one comes in.
func TestReplicasFollowMembers(t *testing.T) {
	ids := make([]membership.NodeID, 3)
	for i := range ids {
		ids[i] = membership.NodeID(libp2ptest.RandPeerIDFatal(t).String())
	}
	up := func(id membership.NodeID, st membership.Status) membership.Member {
		return membership.Member{Node: id, Status: st}
	}
	members := []membership.Member{up(ids[0], membership.Up), up(ids[1], membership.Up)}
	r := replicasOf(members, nil)
	if len(r) != 2 || r[1] != ids[1] {
		t.Fatalf("replicas %v", r)
	}
	v := &View{replicas: r}
	if again := replicasOf(members, v); &again[0] != &r[0] {
		t.Error("the same members gave a new slice")
	}
	members = append(members, up(ids[2], membership.Joining))
	members[0].Status = membership.Leaving
	if r2 := replicasOf(members, v); len(r2) != 2 || r2[0] != ids[1] || r2[1] != ids[2] {
		t.Fatalf("after a leave and a join: %v", r2)
	}
}
