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

// view is the machine's mutable membership state, with indexes kept as it changes so that what
// a member does per message costs nothing per member of the cluster: the ids in order, the
// digest of each bucket (gossip.go), the voters, and the members a leader has to act on.
// Members are never deleted (Removed is a tombstone), nor are reachability rows.
//
// Every write goes through put and putRow, which keep the indexes. A record, once written, is
// never changed in place: a change writes a new one (so a State made of the view may share
// its slices).
type view struct {
	members map[NodeID]*Member
	reach   map[NodeID]*ReachRow

	ids     []NodeID                // every member's id, sorted
	buckets [fineBuckets]fineBucket // the state by fine bucket (gossip.go)
	voters  map[NodeID]bool         // members with Voter that are not Removed
	pending map[NodeID]bool         // members a leader may move: Joining, WeaklyUp, Leaving, Exiting, Down
	touched map[NodeID]bool         // members written since the last takeTouched
	// observing are the observers whose row has someone unreachable: what reachability is
	// read from (rows are kept, most of them empty, once their observers saw everyone again).
	observing map[NodeID]bool

	// The reachability index, kept as rows and members are written, so that what is
	// unreachable costs nothing per observation to read: a partition of a large cluster
	// spreads an observation from each member, each a change of every member's view.
	counts       map[NodeID]bool // observers whose rows count: a member not Down or Removed, of the row's incarnation
	observedBy   map[NodeID]int  // subject → how many observers that count name it
	reachAt      uint64          // bumped whenever what counts of the observations changes
	unreachSet   map[NodeID]bool // unreachable() at unreachSetAt
	unreachSetAt uint64
	maxUp        uint64 // the highest up-number given
}

// fineBucket is the part of the state whose ids hash to one of fineBuckets buckets: the
// buckets a push-pull exchange compares are unions of these (gossip.go).
type fineBucket struct {
	ids   []NodeID // members, sorted
	obs   []NodeID // reachability observers, sorted
	sum   uint64   // digest of what merge compares of them; valid unless stale
	stale bool
}

func newView() view {
	return view{members: map[NodeID]*Member{}, reach: map[NodeID]*ReachRow{},
		voters: map[NodeID]bool{}, pending: map[NodeID]bool{}, observing: map[NodeID]bool{}, touched: map[NodeID]bool{},
		counts: map[NodeID]bool{}, observedBy: map[NodeID]int{}}
}

// put writes member record m (which the view then owns).
func (v *view) put(m *Member) {
	id := m.Node
	if _, ok := v.members[id]; !ok {
		v.ids = insertSorted(v.ids, id)
		b := &v.buckets[fineBucketOf(id)]
		b.ids = insertSorted(b.ids, id)
	}
	v.members[id] = m
	v.stale(id)
	v.touched[id] = true
	v.maxUp = max(v.maxUp, m.UpNumber)
	if m.Voter && m.Status != Removed {
		v.voters[id] = true
	} else {
		delete(v.voters, id)
	}
	if m.Status != Up && m.Status != Removed {
		v.pending[id] = true
	} else {
		delete(v.pending, id)
	}
	v.recount(id)
	if v.observedBy[id] > 0 {
		v.reachAt++ // whether it counts as a subject may have changed
	}
}

// rowCounts reports whether observer obs's row counts: obs is a member not Down or Removed,
// of the row's incarnation.
func (v *view) rowCounts(obs NodeID) bool {
	m, row := v.members[obs], v.reach[obs]
	return m != nil && row != nil && m.countsAsMember() && m.Incarnation == row.Incarnation
}

// recount brings the index up to date with whether obs's row counts.
func (v *view) recount(obs NodeID) {
	now := v.rowCounts(obs)
	if now == v.counts[obs] {
		return
	}
	d := -1
	if now {
		v.counts[obs], d = true, 1
	} else {
		delete(v.counts, obs)
	}
	for _, s := range v.reach[obs].Unreachable {
		v.observe(s, d)
	}
	v.reachAt++
}

func (v *view) observe(subject NodeID, d int) {
	if c := v.observedBy[subject] + d; c > 0 {
		v.observedBy[subject] = c
	} else {
		delete(v.observedBy, subject)
	}
}

// putRow writes reachability row r (which the view then owns).
func (v *view) putRow(r *ReachRow) {
	if _, ok := v.reach[r.Observer]; !ok {
		b := &v.buckets[fineBucketOf(r.Observer)]
		b.obs = insertSorted(b.obs, r.Observer)
	}
	if old := v.reach[r.Observer]; old != nil && v.counts[r.Observer] {
		for _, s := range old.Unreachable {
			v.observe(s, -1)
		}
		delete(v.counts, r.Observer)
		v.reachAt++
	}
	v.reach[r.Observer] = r
	v.stale(r.Observer)
	if len(r.Unreachable) > 0 {
		v.observing[r.Observer] = true
	} else {
		delete(v.observing, r.Observer)
	}
	v.recount(r.Observer)
}

func (v *view) stale(id NodeID) { v.buckets[fineBucketOf(id)].stale = true }

// takeTouched returns the members written since the last call, sorted.
func (v *view) takeTouched() []NodeID {
	out := make([]NodeID, 0, len(v.touched))
	for id := range v.touched {
		out = append(out, id)
	}
	clear(v.touched)
	slices.Sort(out)
	return out
}

func insertSorted(s []NodeID, id NodeID) []NodeID {
	i, found := slices.BinarySearch(s, id)
	if found {
		return s
	}
	return slices.Insert(s, i, id)
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
			v.put(m.clone())
			changed = true
		case m.Incarnation < cur.Incarnation:
		case m.supersedes(cur):
			// Within an incarnation, the most advanced record, and Voter once either has it:
			// the leader may have marked it on an older status than the other side moved on
			// to, and a join of the two must keep both.
			c := m.clone()
			c.Voter = c.Voter || cur.Voter
			v.put(c)
			changed = true
		case m.Voter && !cur.Voter:
			c := cur.clone()
			c.Voter = true
			v.put(c)
			changed = true
		}
	}
	for i := range s.Reach {
		r := &s.Reach[i]
		if cur, ok := v.reach[r.Observer]; !ok || r.newerThan(cur) {
			c := *r
			c.Unreachable = slices.Clone(r.Unreachable)
			v.putRow(&c)
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

// sortedIDs returns every member's id in order. The slice is the view's: do not change it.
func (v *view) sortedIDs() []NodeID { return v.ids }

// digest hashes everything that merge compares, so two members report the same digest
// exactly when their views are equal (up to a 64-bit hash): the digests of the fine buckets,
// of which only those written since are computed again.
func (v *view) digest() uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range v.buckets {
		binary.LittleEndian.PutUint64(b[:], v.bucketSum(i))
		h.Write(b[:])
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
//
// It is read from the index, and computed again only when what counts of the observations
// changed; the map returned is shared until then: do not change it.
func (v *view) unreachable() map[NodeID]bool {
	if v.unreachSet != nil && v.unreachSetAt == v.reachAt {
		return v.unreachSet
	}
	u := map[NodeID]bool{}
	for s := range v.observedBy {
		if sm, ok := v.members[s]; ok && sm.countsAsMember() {
			u[s] = true
		}
	}
	v.unreachSet, v.unreachSetAt = u, v.reachAt
	return u
}
