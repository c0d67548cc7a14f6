package membership

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func randomState(r *rand.Rand) State {
	var s State
	for i := range 1 + r.IntN(6) {
		s.Members = append(s.Members, Member{
			Node:        NodeID(string(rune('a' + i))),
			Incarnation: uint64(1 + r.IntN(2)),
			Status:      Status(r.IntN(int(Removed) + 1)),
			UpNumber:    uint64(r.IntN(4)),
			Roles:       [][]string{nil, {"x"}, {"y"}}[r.IntN(3)],
		})
	}
	for i := range r.IntN(4) {
		row := ReachRow{Observer: NodeID(string(rune('a' + i))), Incarnation: uint64(1 + r.IntN(2)), Version: uint64(r.IntN(5))}
		if r.IntN(2) == 0 {
			row.Unreachable = []NodeID{"b"}
		}
		s.Reach = append(s.Reach, row)
	}
	return s
}

func merged(states ...State) uint64 {
	v := newView()
	for i := range states {
		v.merge(&states[i])
	}
	return v.digest()
}

// TestMergeIsASemilattice: whatever order and however often states are merged, the result is
// the same — the property that makes gossip converge.
func TestMergeIsASemilattice(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		a, b, c := randomState(r), randomState(r), randomState(r)
		if merged(a, b) != merged(b, a) {
			t.Fatalf("not commutative:\n%+v\n%+v", a, b)
		}
		if merged(a, b, c) != merged(c, a, b) || merged(a, b, c) != merged(b, c, a) {
			t.Fatalf("not associative")
		}
		if merged(a, a, b) != merged(a, b) || merged(a, b, a, b) != merged(a, b) {
			t.Fatalf("not idempotent")
		}
	}
}

func TestSupersedes(t *testing.T) {
	up := Member{Node: "a", Incarnation: 1, Status: Up, UpNumber: 1}
	cases := []struct {
		a, b Member
		want bool
	}{
		{Member{Incarnation: 2, Status: Joining}, up, true}, // a new incarnation replaces the old one
		{Member{Incarnation: 1, Status: Leaving}, up, true},
		{Member{Incarnation: 1, Status: Down}, Member{Incarnation: 1, Status: Exiting}, true},
		{Member{Incarnation: 1, Status: Removed}, Member{Incarnation: 1, Status: Down}, true},
		{Member{Incarnation: 1, Status: Joining}, up, false},
		{Member{Incarnation: 1, Status: Up, UpNumber: 2}, Member{Incarnation: 1, Status: Up, UpNumber: 1}, true},
	}
	for i, c := range cases {
		if got := c.a.supersedes(&c.b); got != c.want {
			t.Errorf("case %d: %+v supersedes %+v = %v", i, c.a, c.b, got)
		}
	}
}

// TestReachabilityIndex: whatever rows and records are written in whatever order, the
// unreachable members the index gives are those a reading of every row gives.
func TestReachabilityIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	brute := func(v *view) map[NodeID]bool {
		u := map[NodeID]bool{}
		for obs, row := range v.reach {
			om, ok := v.members[obs]
			if !ok || !om.countsAsMember() || om.Incarnation != row.Incarnation {
				continue
			}
			for _, s := range row.Unreachable {
				if sm, ok := v.members[s]; ok && sm.countsAsMember() {
					u[s] = true
				}
			}
		}
		return u
	}
	for range 300 {
		v := newView()
		for range 40 {
			st := randomState(r)
			v.merge(&st)
			if r.IntN(3) == 0 { // an observer's newer row, and a member moving on
				id := NodeID(string(rune('a' + r.IntN(6))))
				var un []NodeID
				for _, s := range []NodeID{"a", "b", "c", "d", "e", "f"} {
					if r.IntN(3) == 0 {
						un = append(un, s)
					}
				}
				v.putRow(&ReachRow{Observer: id, Incarnation: uint64(1 + r.IntN(2)), Version: uint64(10 + r.IntN(100)), Unreachable: un})
				if m, ok := v.members[id]; ok {
					c := m.clone()
					c.Status = Status(r.IntN(int(Removed) + 1))
					v.put(c)
				}
			}
			got, want := v.unreachable(), brute(&v)
			if len(got) != len(want) {
				t.Fatalf("index %v, reading every row %v", got, want)
			}
			for s := range want {
				if !got[s] {
					t.Fatalf("index %v, reading every row %v", got, want)
				}
			}
		}
	}
}

// TestVoters: Voters lists the members marked Voter that are not Removed, sorted — not the
// possible voters that VoterWhole adds for the lease's whole.
func TestVoters(t *testing.T) {
	v := newView()
	for _, m := range []Member{
		{Node: "c", Status: Up, UpNumber: 3, Voter: true},
		{Node: "a", Status: Leaving, UpNumber: 1, Voter: true},
		{Node: "b", Status: Removed, UpNumber: 2, Voter: true},
		{Node: "d", Status: Joining},
	} {
		v.put(&m)
	}
	n := &Node{v: v}
	if got := n.Voters(); !slices.Equal(got, []NodeID{"a", "c"}) {
		t.Errorf("voters %v, want [a c]", got)
	}
}
