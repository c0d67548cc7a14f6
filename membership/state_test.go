package membership

import (
	"math/rand/v2"
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
