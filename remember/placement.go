package remember

import (
	"cmp"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Defaults of the placement.
const (
	// DefaultReplicationFactor is sharding.store.replication-factor: the members that hold
	// a shard's records.
	DefaultReplicationFactor = 3
	// DefaultMetadataReplicas is sharding.store.metadata-replicas: the oldest members that
	// hold the cluster metadata.
	DefaultMetadataReplicas = 5
)

// Placement says which members hold what, as every member computes it from the same
// membership: the cluster metadata on the voters (the oldest members), and the records
// of each shard on ReplicationFactor members of its type's role, chosen by rendezvous
// hashing and spread over zones, the shard's host first. It is a value: build a new one
// when the membership changes (NewPlacement), never change one.
type Placement struct {
	members []PlacedMember // by id
	byID    map[NodeID]int
	meta    []NodeID
	rf      int
	roles   map[string]string // entity type → the role its shards need ("" or absent: any)
}

// PlacedMember is a member as placement sees it.
type PlacedMember struct {
	ID NodeID
	// Zone is the member's zone (cluster.zone, --zone); "" for none. Replica sets spread
	// over zones.
	Zone string
	// Roles are the member's roles: a shard's replicas are members of its type's role.
	Roles []string
	// Age orders the members for the metadata set: the up-number (1 for the first member
	// moved Up); 0 for a member not Up yet, younger than every Up one.
	Age uint64
	// Voter: the member is one of the voters (membership's bounded set whose majority
	// grants the serving lease and which the split-brain resolver keeps a majority of).
	// When there are voters, the metadata lives on them: where the cluster may serve, a
	// majority of the metadata's replicas is.
	Voter bool
	// Away: the member may hold no shard's records (it is leaving, or down); it is listed
	// only as a voter.
	Away bool
	// Down: the member is downed (away, and not coming back as it is): never a metadata
	// voter.
	Down bool
}

// NewPlacement returns the placement over members with replicationFactor replicas per
// shard (0: the default), the metadata on the voters — or, while there are none, on the
// oldest metadataReplicas members (0: the default). typeRoles maps an entity type to the
// role its shards need.
func NewPlacement(members []PlacedMember, replicationFactor, metadataReplicas int, typeRoles map[string]string) *Placement {
	if replicationFactor <= 0 {
		replicationFactor = DefaultReplicationFactor
	}
	if metadataReplicas <= 0 {
		metadataReplicas = DefaultMetadataReplicas
	}
	p := &Placement{members: slices.Clone(members), rf: replicationFactor, roles: typeRoles, byID: make(map[NodeID]int, len(members))}
	slices.SortFunc(p.members, func(a, b PlacedMember) int { return cmp.Compare(a.ID, b.ID) })
	p.members = slices.CompactFunc(p.members, func(a, b PlacedMember) bool { return a.ID == b.ID })
	for i, m := range p.members {
		p.byID[m.ID] = i
	}
	voters := slices.ContainsFunc(p.members, func(m PlacedMember) bool { return m.Voter })
	// A member that is away (departing: it moves its replicas off before it leaves) is no
	// voter of the metadata group either: the group's leader removes it, and it leaves once
	// no configuration names it — unless that leaves an even number of voters, and it still
	// runs (leaving, not downed): then the oldest such one stays a voter until it is gone
	// from the membership. An even group tolerates no more failures than the odd one below
	// it, and the running member's vote is what lets the group change at all should another
	// voter die meanwhile: with three members, one leaving, the group of the other two lost
	// its majority for good when one of them was killed (reminder soak seed 68; the
	// three-member group, its leaving member's vote included, moves to the last one).
	candidates := slices.DeleteFunc(slices.Clone(p.members), func(m PlacedMember) bool {
		return voters && !m.Voter
	})
	sortByAge(candidates)
	byAge := slices.DeleteFunc(slices.Clone(candidates), func(m PlacedMember) bool { return m.Away })
	if voters {
		metadataReplicas = len(byAge)
	}
	byAge = byAge[:min(metadataReplicas, len(byAge))]
	if len(byAge)%2 == 0 {
		if i := slices.IndexFunc(candidates, func(m PlacedMember) bool { return m.Away && !m.Down }); i >= 0 {
			byAge = append(byAge, candidates[i])
			sortByAge(byAge)
		}
	}
	for _, m := range byAge {
		p.meta = append(p.meta, m.ID)
	}
	return p
}

// sortByAge sorts members oldest first, those not Up yet last.
func sortByAge(ms []PlacedMember) {
	slices.SortStableFunc(ms, func(a, b PlacedMember) int {
		switch {
		case a.Age == b.Age:
			return 0
		case a.Age == 0:
			return 1
		case b.Age == 0:
			return -1
		}
		return cmp.Compare(a.Age, b.Age)
	})
}

// Members returns the members, by id.
func (p *Placement) Members() []NodeID {
	out := make([]NodeID, len(p.members))
	for i, m := range p.members {
		out[i] = m.ID
	}
	return out
}

// Age returns id's age: its up-number (1 for the first member moved Up in the cluster, the
// one member that may found the metadata group of a new cluster); 0 while it is not Up, or
// not a member. While a cluster forms, members see each other Joining and in different
// orders; the up-numbers the membership leader gives are the same in every view.
func (p *Placement) Age(id NodeID) uint64 {
	if i, ok := p.byID[id]; ok {
		return p.members[i].Age
	}
	return 0
}

// Has reports whether id is one of the members.
func (p *Placement) Has(id NodeID) bool { _, ok := p.byID[id]; return ok }

// Equal reports whether p and o place everything alike (o may be nil).
func (p *Placement) Equal(o *Placement) bool {
	if o == nil || p.rf != o.rf || !slices.Equal(p.meta, o.meta) || len(p.members) != len(o.members) || len(p.roles) != len(o.roles) {
		return false
	}
	for t, r := range p.roles {
		if or, ok := o.roles[t]; !ok || or != r {
			return false
		}
	}
	for i := range p.members {
		a, b := &p.members[i], &o.members[i]
		if a.ID != b.ID || a.Zone != b.Zone || a.Away != b.Away || a.Down != b.Down || a.Age != b.Age || a.Voter != b.Voter || !slices.Equal(a.Roles, b.Roles) {
			return false
		}
	}
	return true
}

// ReplicationFactor is how many members hold a shard.
func (p *Placement) ReplicationFactor() int { return p.rf }

// Meta returns the members that hold the cluster metadata: the oldest ones.
func (p *Placement) Meta() []NodeID { return p.meta }

// Target returns the replica set u should have: home first when it may hold u (the shard's
// host), then the members of the type's role with the highest rendezvous scores for u, one
// per zone before a second in any zone. Fewer when fewer members may hold it; nil for the
// metadata (see Meta).
func (p *Placement) Target(u Unit, home NodeID) []NodeID {
	return p.target(u, []NodeID{home})
}

// Keep returns target, or — when it is smaller than half of the members of set (the set u
// has now) that are still members — target filled up to the replication factor with the
// members of set that are away but still members (leaving, departing, down). A set never
// shrinks to fewer than half of itself onto the few members left present: when most of its
// members leave at once (the cluster scaled down below the replication factor, every member
// leaving), the away ones keep their copies and votes until others can take them. 3 → 2
// members moves {a b L} to {a b}, and 2 → 1 {a L} to {a} (members leaving one by one: the
// last one holds the records); {a L L'} stays while L and L' leave together. Members of
// set already removed count for nothing: {a L R} with R removed moves to {a}.
func (p *Placement) Keep(target, set []NodeID) []NodeID {
	members := 0
	for _, id := range set {
		if p.Has(id) {
			members++
		}
	}
	if 2*len(target) >= members {
		return target
	}
	for _, id := range set {
		if len(target) >= p.rf {
			break
		}
		if _, member := p.byID[id]; member && !slices.Contains(target, id) {
			target = append(target, id)
		}
	}
	return target
}

// Repair returns the replica set of u that keeps the members of set that may still hold it
// (in their order) and adds the best others, as Target does: what a set that lost members
// should become, moving as little as possible.
func (p *Placement) Repair(u Unit, set []NodeID) []NodeID { return p.target(u, set) }

// Present reports whether member id may hold records: it is a member, not away.
func (p *Placement) Present(id NodeID) bool {
	i, ok := p.byID[id]
	return ok && !p.members[i].Away
}

// May reports whether member id may hold u's records.
func (p *Placement) May(u Unit, id NodeID) bool {
	i, ok := p.byID[id]
	if !ok {
		return false
	}
	m := &p.members[i]
	role := p.roles[u.Type]
	return !m.Away && (role == "" || slices.Contains(m.Roles, role))
}

// target returns u's set: the members of keep that may hold it first, in order, then the
// best others by rendezvous score, one per zone before a second in any zone.
func (p *Placement) target(u Unit, keep []NodeID) []NodeID {
	if u.Meta() {
		return nil
	}
	out := make([]NodeID, 0, p.rf)
	used := make(map[string]bool)
	for _, id := range keep {
		if len(out) < p.rf && p.May(u, id) && !slices.Contains(out, id) {
			out = append(out, id)
			used[p.members[p.byID[id]].Zone] = true
		}
	}
	type scored struct {
		m     *PlacedMember
		score uint64
	}
	cands := make([]scored, 0, len(p.members))
	seed := xxhash.Sum64String(u.Type + "\x00" + u.Shard)
	for i := range p.members {
		m := &p.members[i]
		if !p.May(u, m.ID) || slices.Contains(out, m.ID) {
			continue
		}
		cands = append(cands, scored{m, rendezvous(seed, m.ID)})
	}
	slices.SortFunc(cands, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.m.ID, b.m.ID)
	})
	taken := make([]bool, len(cands))
	// One per zone first; then the best of the rest.
	for i, c := range cands {
		if len(out) == p.rf {
			break
		}
		if !used[c.m.Zone] {
			used[c.m.Zone] = true
			taken[i] = true
			out = append(out, c.m.ID)
		}
	}
	for i, c := range cands {
		if len(out) == p.rf {
			break
		}
		if !taken[i] {
			out = append(out, c.m.ID)
		}
	}
	return out
}

// rendezvous is member id's score for the unit whose hash is seed.
func rendezvous(seed uint64, id NodeID) uint64 {
	return mix64(seed ^ xxhash.Sum64String(string(id)))
}

// mix64 is a 64-bit finalizer (SplitMix64's): scores of one member for nearby seeds are
// unrelated.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// FixedPlacement returns a Config.Placement of members ids, older first, none of them
// voters (the metadata on the oldest five): for tools and tests with a fixed set of
// stores.
func FixedPlacement(ids ...NodeID) func() *Placement {
	ms := make([]PlacedMember, len(ids))
	for i, id := range ids {
		ms[i] = PlacedMember{ID: id, Age: uint64(i + 1)}
	}
	p := NewPlacement(ms, 0, 0, nil)
	return func() *Placement { return p }
}
