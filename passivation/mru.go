package passivation

// mruArea passivates the most recently used entities when it holds more than its limit,
// which suits cyclic access patterns: the longer an entity has not been used, the sooner it
// will be used again. A newly activated entity is its own victim only when the limit is 0:
// otherwise the entity used most recently before it is passivated (as in Akka, which keeps
// the newest entity even over a limit of 0).
type mruArea struct {
	a     *arena
	l     list // most recent at the back
	limit int
}

func (r *mruArea) len() int { return r.l.n }

func (r *mruArea) setLimit(n int, evicted []int32) []int32 {
	r.limit = n
	for r.l.n > r.limit {
		i := r.l.tail
		r.l.remove(r.a.entries, i)
		evicted = append(evicted, i)
	}
	return evicted
}

func (r *mruArea) add(i int32, evicted []int32) []int32 {
	es := r.a.entries
	r.l.pushBack(es, i)
	for r.l.n > r.limit {
		v := es[i].prev // the most recent entity before the new one
		if v == none {
			v = i
		}
		r.l.remove(es, v)
		evicted = append(evicted, v)
	}
	return evicted
}

func (r *mruArea) touch(i int32) { r.l.moveToBack(r.a.entries, i) }

func (r *mruArea) victim() int32 { return r.l.tail }

func (r *mruArea) remove(i int32) { r.l.remove(r.a.entries, i) }
