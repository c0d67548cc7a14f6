package membership

import (
	"slices"
	"testing"
	"time"
)

// seedWorld runs machines given static seed lists on a virtual clock, delivering every
// message at once, and records who formed a cluster.
type seedWorld struct {
	t      *testing.T
	now    time.Time
	nodes  []*Node
	formed []NodeID
}

func newSeedWorld(t *testing.T, seeds map[NodeID][]NodeID) *seedWorld {
	w := &seedWorld{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ids := make([]NodeID, 0, len(seeds))
	for id := range seeds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		n := New(DefaultConfig(), Member{Node: id, Incarnation: 1}, w.now)
		if len(seeds[id]) == 0 {
			n.FormCluster(w.now)
		} else {
			n.JoinSeeds(w.now, seeds[id])
			for _, s := range seeds[id] {
				n.JoinVia(w.now, s)
			}
		}
		w.nodes = append(w.nodes, n)
	}
	return w
}

func (w *seedWorld) run(d time.Duration) {
	by := map[NodeID]*Node{}
	for _, n := range w.nodes {
		by[n.ID()] = n
	}
	for end := w.now.Add(d); w.now.Before(end); w.now = w.now.Add(100 * time.Millisecond) {
		for _, n := range w.nodes {
			n.Tick(w.now)
		}
		for sent := true; sent; {
			sent = false
			for _, n := range w.nodes {
				r := n.Ready()
				for _, ev := range r.Events {
					if _, ok := ev.(Formed); ok {
						w.formed = append(w.formed, n.ID())
					}
				}
				for _, env := range r.Messages {
					if to := by[env.To]; to != nil {
						to.Step(w.now, n.ID(), env.Msg)
						sent = true
					}
				}
			}
		}
	}
}

// TestSeedsWithNoClusterFormOne: members that all list each other as seeds and are in no
// cluster (a cold restart of the whole cluster, or after the resolver downed every member)
// form exactly one, on the member with the lowest id, and the others join it — a chaos run
// had every member downed by down-all-when-unstable, and the restarted members asked each
// other for ever.
func TestSeedsWithNoClusterFormOne(t *testing.T) {
	for name, seeds := range map[string]map[NodeID][]NodeID{
		"each lists the others": {"a": {"b", "c", "d"}, "b": {"a", "c", "d"}, "c": {"a", "b", "d"}, "d": {"a", "b", "c"}},
		// As a supervisor restarts members one after another, each with those running then
		// (the chaos run): b and c do not know a, the lowest; they learn it from those who do.
		"restarted one by one": {"b": {"d", "e"}, "c": {"d", "e", "b"}, "a": {"d", "e", "b", "c"}, "d": {"b", "c", "a"}, "e": {"d", "b", "c", "a"}},
	} {
		w := newSeedWorld(t, seeds)
		w.run(60 * time.Second)
		if !slices.Equal(w.formed, []NodeID{"a"}) {
			t.Errorf("%s: formed by %v, want [a]", name, w.formed)
			continue
		}
		for _, n := range w.nodes {
			for id := range seeds {
				if st := statusOf(n, id); st != Up {
					t.Errorf("%s: %s sees %s %v, want Up", name, n.ID(), id, st)
				}
			}
		}
	}
}

// TestSeedsFormNothingWhileOneIsElsewhere: no member forms a cluster while a seed it was
// given is a member of one (it joins that), while a seed waits for a seed of its own (a's
// seed b waits for z, not started), or while a seed names a lower id.
func TestSeedsFormNothingWhileOneIsElsewhere(t *testing.T) {
	for name, seeds := range map[string]map[NodeID][]NodeID{
		"a seed is a member":       {"a": nil, "b": {"a", "c"}, "c": {"a", "b"}},
		"a seed waits for another": {"b": {"z"}, "a": {"b"}},
		"a lower id elsewhere":     {"b": {"a", "c"}, "c": {"b"}, "a": {"b", "z"}},
	} {
		w := newSeedWorld(t, seeds)
		w.run(60 * time.Second)
		if len(w.formed) != 0 {
			t.Errorf("%s: formed by %v", name, w.formed)
		}
	}
}
