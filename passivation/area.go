package passivation

// area is a replacement policy over a set of arena entries: the whole active set of a
// limit-based strategy, or the admission window or the main area of a composite one. An
// area only links and unlinks entries; the Policy owning it decides whether an unlinked
// entry is passivated or moved to the other area.
type area interface {
	// len returns the number of entries linked in the area.
	len() int
	// setLimit changes the area's limit and unlinks the entries over it, appending them to
	// evicted in eviction order.
	setLimit(n int, evicted []int32) []int32
	// add links the newly activated entry i and unlinks the entries over the limit (which may
	// be i itself), appending them to evicted.
	add(i int32, evicted []int32) []int32
	// touch records an access to entry i, which is linked in this area. It never evicts.
	touch(i int32)
	// victim returns the entry the area would evict next to make room, or none.
	victim() int32
	// remove unlinks entry i without counting it as an eviction.
	remove(i int32)
}

// newArea returns the area for a replacement policy, starting with the given limit.
func newArea(a *arena, p PolicySettings, limit int) area {
	switch p.Policy {
	case LeastRecentlyUsed:
		if len(p.Segmented) >= 2 {
			return newSegmentedArea(a, p.Segmented, limit)
		}
		return &lruArea{a: a, l: newList(), limit: limit}
	case MostRecentlyUsed:
		return &mruArea{a: a, l: newList(), limit: limit}
	case LeastFrequentlyUsed:
		return newLFUArea(a, p.DynamicAging, limit)
	}
	panic("passivation: no area for replacement policy " + p.Policy.String())
}
