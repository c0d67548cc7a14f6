package node

import (
	"slices"
	"testing"

	libp2ptest "github.com/libp2p/go-libp2p/core/test"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
)

// The store's placement is the same pointer while nothing it depends on changes, and
// follows every change: a member leaving holds no shard any more but stays a voter, a new
// one comes in. The metadata is on the voters the view has (membership.Node.Voters).
func TestPlacementFollowsMembers(t *testing.T) {
	ids := make([]membership.NodeID, 3)
	for i := range ids {
		ids[i] = membership.NodeID(libp2ptest.RandPeerIDFatal(t).String())
	}
	c := &Core{types: map[string]*RegisteredType{}}
	member := func(id membership.NodeID, st membership.Status, up uint64, voter bool) membership.Member {
		return membership.Member{Node: id, Status: st, UpNumber: up, Voter: voter, Roles: []string{"zone-a"}}
	}
	members := []membership.Member{member(ids[0], membership.Up, 1, true), member(ids[1], membership.Up, 2, true)}
	voters := ids[:2]
	p := c.placementOf(members, voters, nil)
	if !slices.Equal(p.Meta(), ids[:2]) {
		t.Fatalf("metadata on %v", p.Meta())
	}
	v := &View{placement: p}
	if again := c.placementOf(members, voters, v); again != p {
		t.Error("the same members gave a new placement")
	}
	members = append(members, member(ids[2], membership.Joining, 0, false))
	members[0].Status = membership.Leaving
	p2 := c.placementOf(members, voters, v)
	u := remember.Unit{Type: "t", Shard: "1"}
	if set := p2.Target(u, ""); len(set) != 2 || slices.Contains(set, ids[0]) {
		t.Fatalf("after a leave and a join: set %v", set)
	}
	// A leaving voter is no voter of the metadata group any more: its leader removes it
	// (joint consensus keeps what it holds), and the member leaves once it has.
	if slices.Contains(p2.Meta(), ids[0]) {
		t.Errorf("a leaving voter still holds the metadata: %v", p2.Meta())
	}
	// A member the membership made a voter holds the metadata; the leaving one stays a
	// voter while the others are two (an even group), until it is gone — not once it is
	// downed.
	members[2].Voter = true
	if p3 := c.placementOf(members, ids, v); !slices.Equal(p3.Meta(), ids) {
		t.Errorf("metadata with a possible voter on %v", p3.Meta())
	}
	members[0].Status = membership.Down
	if p4 := c.placementOf(members, ids, v); !slices.Equal(p4.Meta(), []membership.NodeID{ids[1], ids[2]}) {
		t.Errorf("metadata with a downed voter on %v", p4.Meta())
	}
	if ZoneOf(members[1].Roles) != "a" {
		t.Errorf("zone %q", ZoneOf(members[1].Roles))
	}
}

func TestStoreLayout(t *testing.T) {
	l := StoreLayout{}
	u := remember.Unit{Type: "counter", Shard: "12"}
	for _, key := range []string{datadir.Key(datadir.FamilyEntity, "counter", "12", "e1"), StateKey("counter", "12", "e\x00odd"),
		datadir.Key(datadir.FamilyReminder, "counter", "12", "e1", "r")} {
		if got := l.UnitOf(key); got != u {
			t.Errorf("UnitOf(%q) = %v", key, got)
		}
	}
	for _, key := range []string{datadir.Key(datadir.FamilyShard, "counter", "12"), datadir.Key(datadir.FamilyTerm, "counter"),
		l.ConfigKey(u), datadir.Key(datadir.FamilyHistory, "counter", "12", "0001"), datadir.Key(datadir.FamilyLease, "c-shardmesh-sbr"),
		datadir.Key(datadir.FamilyAudit, "0000019a", "id")} {
		if got := l.UnitOf(key); !got.Meta() {
			t.Errorf("UnitOf(%q) = %v, want the metadata", key, got)
		}
	}
	prefixes := map[string]struct {
		u  remember.Unit
		ok bool
	}{
		"":  {remember.Unit{}, false},
		"r": {remember.Unit{}, false},
		datadir.Prefix(datadir.FamilyEntity, "counter"):               {remember.Unit{}, false},
		datadir.Prefix(datadir.FamilyEntity, "counter", "12"):         {u, true},
		datadir.Prefix(datadir.FamilyState, "counter", "12"):          {u, true},
		datadir.Prefix(datadir.FamilyReminder, "counter", "12", "e1"): {u, true},
		datadir.Prefix(datadir.FamilyReminder, "counter"):             {remember.Unit{}, false},
		datadir.Prefix(datadir.FamilyShard, "counter"):                {remember.Unit{}, true},
		datadir.Prefix(datadir.FamilyHistory):                         {remember.Unit{}, true},
	}
	for p, want := range prefixes {
		if got, ok := l.UnitOfPrefix(p); got != want.u || ok != want.ok {
			t.Errorf("UnitOfPrefix(%q) = %v, %v; want %v, %v", p, got, ok, want.u, want.ok)
		}
	}
	for _, p := range l.Prefixes(u) {
		if got, ok := l.UnitOfPrefix(p); !ok || got != u {
			t.Errorf("the unit's prefix %q is not its own", p)
		}
	}
	if typ, ok := OldStateKey(datadir.Key(datadir.FamilyState, "counter", "e1")); !ok || typ != "counter" {
		t.Error("an old state key is not recognised")
	}
	if _, ok := OldStateKey(StateKey("counter", "12", "e1")); ok {
		t.Error("a state key under its shard is taken for an old one")
	}
}
