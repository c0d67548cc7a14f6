package allocation

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// hashRing is a consistent-hash ring: points sorted by position, each naming a node.
type hashRing struct {
	nodes  []membership.NodeID // sorted, distinct
	points []ringPoint         // ascending by position
	// start[b] is the index of the first point whose position's top `bits` bits are ≥ b,
	// so that a lookup scans a bucket of about one point instead of searching them all.
	start []int32
	bits  uint
}

type ringPoint struct {
	pos  uint64
	node int32 // index in nodes
}

// newHashRing places virtualNodes points for each node.
func newHashRing(nodes []membership.NodeID, virtualNodes int) *hashRing {
	nodes = slices.Compact(slices.Sorted(slices.Values(nodes)))
	points := make([]ringPoint, 0, len(nodes)*virtualNodes)
	for n, node := range nodes {
		seed := fnv1a64(string(node))
		for i := range virtualNodes {
			points = append(points, ringPoint{pos: splitMix64(seed, uint64(i)), node: int32(n)})
		}
	}
	// Two points at the same position (odds about 10⁻¹¹ for 10⁴ points) go to the lower
	// node id first, so that every member builds the same ring.
	slices.SortFunc(points, func(a, b ringPoint) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		return cmp.Compare(a.node, b.node)
	})
	r := &hashRing{nodes: nodes, points: points}
	r.bits = uint(min(max(bits.Len(uint(len(points))), 1), 20)) // about one bucket per point
	r.start = make([]int32, 1<<r.bits+1)
	i := 0
	for b := range r.start {
		for i < len(points) && points[i].pos>>(64-r.bits) < uint64(b) {
			i++
		}
		r.start[b] = int32(i)
	}
	return r
}

// hasExactly reports whether the ring's nodes are exactly the nodes of the regions for which
// onRing holds (a view may name a node twice).
func (r *hashRing) hasExactly(regions []Region, onRing func(*Region) bool) bool {
	seen := make([]bool, len(r.nodes))
	distinct := 0
	for i := range regions {
		if !onRing(&regions[i]) {
			continue
		}
		j, found := slices.BinarySearch(r.nodes, regions[i].Node)
		if !found {
			return false
		}
		if !seen[j] {
			seen[j] = true
			distinct++
		}
	}
	return distinct == len(r.nodes)
}

// nodeAt returns the node of the first point at or after pos, wrapping around; "" for an
// empty ring.
func (r *hashRing) nodeAt(pos uint64) membership.NodeID {
	if len(r.points) == 0 {
		return ""
	}
	return r.nodes[r.indexAt(pos)]
}

// indexAt is nodeAt as an index in r.nodes; the ring must not be empty.
func (r *hashRing) indexAt(pos uint64) int32 {
	b := pos >> (64 - r.bits)
	i, end := int(r.start[b]), int(r.start[b+1])
	for i < end && r.points[i].pos < pos {
		i++
	}
	if i == len(r.points) {
		i = 0
	}
	return r.points[i].node
}

// index returns node's index in r.nodes, or -1 when it is not on the ring.
func (r *hashRing) index(node membership.NodeID) int32 {
	if i, found := slices.BinarySearch(r.nodes, node); found {
		return int32(i)
	}
	return -1
}

// shardPosition is a shard's position on the ring.
func shardPosition(id shard.ID) uint64 { return mix64(fnv1a64(string(id))) }

// fnv1a64 is the 64-bit FNV-1a hash of s's bytes.
func fnv1a64(s string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// splitMix64 is the i-th output (from 0) of the SplitMix64 generator seeded with seed.
func splitMix64(seed, i uint64) uint64 { return mix64(seed + (i+1)*0x9e3779b97f4a7c15) }

// mix64 is SplitMix64's finalizer: it spreads every input bit over the whole output, which
// FNV-1a alone does poorly for short ids that differ in their last characters.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
