package passivation

// lfuArea passivates the least frequently used entities, the least recently used first
// among equally frequent ones. Entities sit in frequency buckets kept in ascending order of
// priority; within a bucket they are in order of their last access.
//
// With dynamic aging (LFU-DA) the priority of an entity is its access count plus the
// area's age, and the age becomes the priority of each entity passivated to make room, so
// entities that were popular long ago stop outranking the ones popular now.
//
// As in Akka, room is made before a new entity is added, so that ageing applies to it; the
// new entity is its own victim only when the limit is 0 (Akka would keep it over the limit).
type lfuArea struct {
	a       *arena
	buckets []bucket
	free    int32 // chain of free buckets through next
	head    int32 // least frequent bucket
	n       int
	limit   int
	aging   bool
	age     int64
}

// bucket holds the entities of one priority.
type bucket struct {
	priority   int64
	prev, next int32
	entries    list
}

func newLFUArea(a *arena, aging bool, limit int) *lfuArea {
	return &lfuArea{a: a, free: none, head: none, limit: limit, aging: aging}
}

func (f *lfuArea) len() int { return f.n }

func (f *lfuArea) setLimit(n int, evicted []int32) []int32 {
	f.limit = n
	for f.n > f.limit {
		evicted = append(evicted, f.evictLeast())
	}
	return evicted
}

func (f *lfuArea) add(i int32, evicted []int32) []int32 {
	for excess := f.n - f.limit + 1; excess > 0 && f.n > 0; excess-- {
		evicted = append(evicted, f.evictLeast())
	}
	if f.limit <= 0 {
		return append(evicted, i)
	}
	priority := int64(1)
	if f.aging {
		priority += f.age
	}
	var b int32
	if f.head != none && f.buckets[f.head].priority < priority {
		b = f.findOrInsertAfter(f.head, priority)
	} else if f.head != none && f.buckets[f.head].priority == priority {
		b = f.head
	} else {
		b = f.newBucket(priority, none, f.head)
	}
	es := f.a.entries
	es[i].accesses = 1
	es[i].bucket = b
	f.buckets[b].entries.pushBack(es, i)
	f.n++
	return evicted
}

func (f *lfuArea) touch(i int32) {
	es := f.a.entries
	es[i].accesses++
	priority := es[i].accesses
	if f.aging {
		priority += f.age
	}
	from := es[i].bucket
	to := f.findOrInsertAfter(from, priority)
	f.unlink(i)
	es[i].bucket = to
	f.buckets[to].entries.pushBack(es, i)
}

func (f *lfuArea) victim() int32 {
	if f.head == none {
		return none
	}
	return f.buckets[f.head].entries.head
}

func (f *lfuArea) remove(i int32) {
	f.unlink(i)
	f.n--
}

// evictLeast unlinks and returns the least recent of the least frequent entities, ageing
// the area to its priority when dynamic aging is on.
func (f *lfuArea) evictLeast() int32 {
	i := f.buckets[f.head].entries.head
	if f.aging {
		f.age = f.buckets[f.head].priority
	}
	f.unlink(i)
	f.n--
	return i
}

// findOrInsertAfter returns the bucket of the given priority, searching forward from bucket
// from (whose priority is lower) and inserting a new bucket in order when there is none.
func (f *lfuArea) findOrInsertAfter(from int32, priority int64) int32 {
	cur := from
	for {
		next := f.buckets[cur].next
		switch {
		case next == none || f.buckets[next].priority > priority:
			return f.newBucket(priority, cur, next)
		case f.buckets[next].priority == priority:
			return next
		}
		cur = next
	}
}

// newBucket links a new empty bucket between prev and next (either may be none).
func (f *lfuArea) newBucket(priority int64, prev, next int32) int32 {
	var b int32
	if f.free != none {
		b = f.free
		f.free = f.buckets[b].next
	} else {
		f.buckets = append(f.buckets, bucket{})
		b = int32(len(f.buckets) - 1)
	}
	f.buckets[b] = bucket{priority: priority, prev: prev, next: next, entries: newList()}
	if prev == none {
		f.head = b
	} else {
		f.buckets[prev].next = b
	}
	if next != none {
		f.buckets[next].prev = b
	}
	return b
}

// unlink removes entry i from its bucket, dropping the bucket when it becomes empty.
func (f *lfuArea) unlink(i int32) {
	es := f.a.entries
	b := es[i].bucket
	bk := &f.buckets[b]
	bk.entries.remove(es, i)
	es[i].bucket = none
	if bk.entries.n > 0 {
		return
	}
	prev, next := bk.prev, bk.next
	if prev == none {
		f.head = next
	} else {
		f.buckets[prev].next = next
	}
	if next != none {
		f.buckets[next].prev = prev
	}
	bk.next = f.free
	f.free = b
}
