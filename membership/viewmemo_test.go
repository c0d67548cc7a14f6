package membership

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestConvergenceMemo: Convergence, which looks at every member only after the view changed
// or a peer reported another digest, answers what convergence computes afresh, at every
// step of three members forming a cluster, a fourth joining, and one of them going silent
// (killed): it is true once everyone has the view, false while a join spreads and once the
// silent one is unreachable. Alongside, what readers of the view rely on: Members stays the
// same while MemberChanges does, and UnreachableMembers lists the members Unreachable
// reports.
func TestConvergenceMemo(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	nodes := map[NodeID]*Node{}
	ids := []NodeID{"a", "b", "c", "d"}
	for _, id := range ids {
		nodes[id] = New(cfg, Member{Node: id, Incarnation: 1}, t0)
	}
	nodes["a"].FormCluster(t0)
	nodes["b"].JoinVia(t0, "a")
	nodes["c"].JoinVia(t0, "a")
	dead := map[NodeID]bool{"d": true} // not started yet
	var trues, falses, memberChanges int
	type seen struct {
		rev     uint64
		members []Member
	}
	last := map[NodeID]seen{}
	check := func(now time.Time) {
		for _, id := range ids {
			n := nodes[id]
			if dead[id] || !n.Joined() {
				continue
			}
			got, want := n.Convergence(), n.convergence()
			if got != want {
				t.Fatalf("%v: %s's Convergence() = %v, convergence() = %v", now.Sub(t0), id, got, want)
			}
			members := n.Members()
			if l, ok := last[id]; ok && l.rev == n.MemberChanges() && !reflect.DeepEqual(l.members, members) {
				t.Fatalf("%v: %s's members changed while MemberChanges stayed %d:\n%v\n%v", now.Sub(t0), id, l.rev, l.members, members)
			} else if ok && l.rev != n.MemberChanges() {
				memberChanges++
			}
			last[id] = seen{n.MemberChanges(), members}
			var unreachable []NodeID
			for _, m := range members {
				if n.Unreachable(m.Node) {
					unreachable = append(unreachable, m.Node)
				}
			}
			if u := n.UnreachableMembers(); !slices.Equal(u, unreachable) && len(u)+len(unreachable) > 0 {
				t.Fatalf("%v: %s's UnreachableMembers() = %v, Unreachable reports %v", now.Sub(t0), id, u, unreachable)
			}
			if got {
				trues++
			} else {
				falses++
			}
		}
	}
	deliver := func(now time.Time) {
		for moved := true; moved; {
			moved = false
			for _, id := range ids {
				if dead[id] {
					continue
				}
				for _, env := range nodes[id].Ready().Messages {
					if to := nodes[env.To]; to != nil && !dead[env.To] {
						to.Step(now, id, env.Msg)
						moved = true
						check(now)
					}
				}
			}
		}
	}
	for now := t0; now.Before(t0.Add(40 * time.Second)); now = now.Add(50 * time.Millisecond) {
		switch now.Sub(t0) {
		case 10 * time.Second:
			delete(dead, "d")
			nodes["d"].JoinVia(now, "b")
		case 25 * time.Second:
			dead["c"] = true // kill -9
		}
		for _, id := range ids {
			if !dead[id] {
				nodes[id].Tick(now)
			}
		}
		deliver(now)
		check(now)
	}
	if trues == 0 || falses == 0 || memberChanges == 0 {
		t.Fatalf("converged %d times, not converged %d times, members changed %d times: the run did not test both", trues, falses, memberChanges)
	}
	if nodes["a"].Convergence() || !nodes["a"].Unreachable("c") {
		t.Errorf("after c went silent: converged %v, c unreachable %v", nodes["a"].Convergence(), nodes["a"].Unreachable("c"))
	}
}
