package passivation

// lruArea passivates the least recently used entities when it holds more than its limit.
type lruArea struct {
	a     *arena
	l     list // least recent at the front
	limit int
}

func (r *lruArea) len() int { return r.l.n }

func (r *lruArea) setLimit(n int, evicted []int32) []int32 {
	r.limit = n
	return r.evictExcess(evicted)
}

func (r *lruArea) add(i int32, evicted []int32) []int32 {
	r.l.pushBack(r.a.entries, i)
	return r.evictExcess(evicted)
}

func (r *lruArea) touch(i int32) { r.l.moveToBack(r.a.entries, i) }

func (r *lruArea) victim() int32 { return r.l.head }

func (r *lruArea) remove(i int32) { r.l.remove(r.a.entries, i) }

func (r *lruArea) evictExcess(evicted []int32) []int32 {
	for r.l.n > r.limit {
		i := r.l.head
		r.l.remove(r.a.entries, i)
		evicted = append(evicted, i)
	}
	return evicted
}
