package membership

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// State is a snapshot of the membership state as it travels in gossip: every member record
// (tombstones included) and every observer's reachability row. It is a value: receivers merge
// it into their own state and never keep references into it.
type State struct {
	Members []Member
	Reach   []ReachRow
}

// ReachRow is one observer's view of which members it cannot reach. The observer alone
// writes its row; (Incarnation, Version) orders the observer's successive rows.
type ReachRow struct {
	Observer    NodeID
	Incarnation uint64
	Version     uint64
	Unreachable []NodeID // sorted
}

// newerThan orders an observer's rows: by incarnation, then version. An observer never writes
// two different rows with the same version, but should it (a bug, a restored disk), the
// tie is broken by content so every member still merges to the same row.
func (r *ReachRow) newerThan(o *ReachRow) bool {
	if r.Incarnation != o.Incarnation {
		return r.Incarnation > o.Incarnation
	}
	if r.Version != o.Version {
		return r.Version > o.Version
	}
	return slices.Compare(r.Unreachable, o.Unreachable) > 0
}

// view is the machine's mutable membership state.
type view struct {
	members map[NodeID]*Member
	reach   map[NodeID]*ReachRow
}

func newView() view {
	return view{members: map[NodeID]*Member{}, reach: map[NodeID]*ReachRow{}}
}

// merge folds s into v and reports whether v changed. The merge is commutative, associative
// and idempotent: per node the record that supersedes (newer incarnation, then later status,
// then higher up-number) wins, with Voter if either record of that incarnation had it; per
// observer the newer row wins.
func (v *view) merge(s *State) bool {
	changed := false
	for i := range s.Members {
		m := &s.Members[i]
		cur, ok := v.members[m.Node]
		switch {
		case !ok || m.Incarnation > cur.Incarnation:
			v.members[m.Node] = m.clone()
			changed = true
		case m.Incarnation < cur.Incarnation:
		case m.supersedes(cur):
			// Within an incarnation, the most advanced record, and Voter once either has it:
			// the leader may have marked it on an older status than the other side moved on
			// to, and a join of the two must keep both.
			c := m.clone()
			c.Voter = c.Voter || cur.Voter
			v.members[m.Node] = c
			changed = true
		case m.Voter && !cur.Voter:
			c := cur.clone()
			c.Voter = true
			v.members[m.Node] = c
			changed = true
		}
	}
	for i := range s.Reach {
		r := &s.Reach[i]
		if cur, ok := v.reach[r.Observer]; !ok || r.newerThan(cur) {
			c := *r
			c.Unreachable = slices.Clone(r.Unreachable)
			v.reach[r.Observer] = &c
			changed = true
		}
	}
	return changed
}

// snapshot returns v as a State value, sorted so equal views give equal snapshots.
func (v *view) snapshot() State {
	s := State{Members: make([]Member, 0, len(v.members)), Reach: make([]ReachRow, 0, len(v.reach))}
	for _, id := range v.sortedIDs() {
		s.Members = append(s.Members, *v.members[id].clone())
	}
	obs := make([]NodeID, 0, len(v.reach))
	for id := range v.reach {
		obs = append(obs, id)
	}
	slices.Sort(obs)
	for _, id := range obs {
		r := *v.reach[id]
		r.Unreachable = slices.Clone(r.Unreachable)
		s.Reach = append(s.Reach, r)
	}
	return s
}

func (v *view) sortedIDs() []NodeID {
	ids := make([]NodeID, 0, len(v.members))
	for id := range v.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// digest hashes everything that merge compares, so two members report the same digest
// exactly when their views are equal.
func (v *view) digest() uint64 {
	h := fnv.New64a()
	var b [8]byte
	num := func(n uint64) {
		binary.LittleEndian.PutUint64(b[:], n)
		h.Write(b[:])
	}
	str := func(s NodeID) {
		num(uint64(len(s)))
		h.Write([]byte(s))
	}
	for _, id := range v.sortedIDs() {
		m := v.members[id]
		str(id)
		num(m.Incarnation)
		num(uint64(m.Status))
		num(m.UpNumber)
		if m.Voter {
			num(1)
		} else {
			num(0)
		}
	}
	obs := make([]NodeID, 0, len(v.reach))
	for id := range v.reach {
		obs = append(obs, id)
	}
	slices.Sort(obs)
	for _, id := range obs {
		r := v.reach[id]
		str(id)
		num(r.Incarnation)
		num(r.Version)
		for _, u := range r.Unreachable {
			str(u)
		}
	}
	return h.Sum64()
}

// observes reports whether the reachability row of observer (of incarnation inc) has id
// unreachable.
func (v *view) observes(observer NodeID, inc uint64, id NodeID) bool {
	row := v.reach[observer]
	if row == nil || row.Incarnation != inc {
		return false
	}
	_, found := slices.BinarySearch(row.Unreachable, id)
	return found
}

// unreachable returns the members that some current observer cannot reach: observers and
// subjects both counting members (not Down, not Removed), the observer's row from its
// current incarnation.
func (v *view) unreachable() map[NodeID]bool {
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
