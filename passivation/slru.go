package passivation

// segmentedArea is a segmented least-recently-used area (S-LRU, S4LRU): entities enter the
// lowest segment; an access promotes an entity to the most recent position of the next
// segment up (or refreshes it in the highest); a higher segment over its share demotes its
// least recent entities to the most recent position of the segment below; only the least
// recent entities of the lowest segment are passivated. The limit is split by proportions:
// segment k > 0 gets floor(proportion[k] × limit) and the lowest segment gets the rest, so
// that the shares add up to the limit exactly.
type segmentedArea struct {
	a           *arena
	proportions []float64
	segs        []list
	limits      []int
	limit       int
	n           int
}

func newSegmentedArea(a *arena, proportions []float64, limit int) *segmentedArea {
	s := &segmentedArea{
		a:           a,
		proportions: proportions,
		segs:        make([]list, len(proportions)),
		limits:      make([]int, len(proportions)),
	}
	for k := range s.segs {
		s.segs[k] = newList()
	}
	s.divide(limit)
	return s
}

func (s *segmentedArea) divide(limit int) {
	s.limit = limit
	rest := limit
	for k := 1; k < len(s.proportions); k++ {
		s.limits[k] = int(s.proportions[k] * float64(limit))
		rest -= s.limits[k]
	}
	s.limits[0] = rest
}

func (s *segmentedArea) len() int { return s.n }

func (s *segmentedArea) setLimit(n int, evicted []int32) []int32 {
	s.divide(n)
	return s.evictExcess(evicted)
}

func (s *segmentedArea) add(i int32, evicted []int32) []int32 {
	s.appendTo(0, i)
	s.n++
	return s.evictExcess(evicted)
}

func (s *segmentedArea) touch(i int32) {
	es := s.a.entries
	level := int(es[i].level)
	highest := len(s.segs) - 1
	if level == highest {
		s.segs[level].moveToBack(es, i)
		return
	}
	s.segs[level].remove(es, i)
	s.appendTo(level+1, i)
	s.demoteExcess(level + 1)
}

func (s *segmentedArea) victim() int32 { return s.segs[0].head }

func (s *segmentedArea) remove(i int32) {
	s.segs[s.a.entries[i].level].remove(s.a.entries, i)
	s.n--
}

func (s *segmentedArea) appendTo(level int, i int32) {
	s.a.entries[i].level = uint8(level)
	s.segs[level].pushBack(s.a.entries, i)
}

// demoteExcess moves the least recent entities of a segment over its share down one level.
func (s *segmentedArea) demoteExcess(level int) {
	es := s.a.entries
	seg := &s.segs[level]
	for seg.n > s.limits[level] {
		i := seg.head
		seg.remove(es, i)
		s.appendTo(level-1, i)
	}
}

// evictExcess first brings every protected segment back to its share, from the highest down,
// then passivates the least recent entities of the lowest segment while over the limit.
func (s *segmentedArea) evictExcess(evicted []int32) []int32 {
	if s.n <= s.limit {
		return evicted
	}
	for level := len(s.segs) - 1; level > 0; level-- {
		s.demoteExcess(level)
	}
	es := s.a.entries
	lowest := &s.segs[0]
	for s.n > s.limit && lowest.n > 0 {
		i := lowest.head
		lowest.remove(es, i)
		s.n--
		evicted = append(evicted, i)
	}
	return evicted
}
