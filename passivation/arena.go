package passivation

// none is the null index of the intrusive lists.
const none int32 = -1

// Where an active entity is tracked.
const (
	inNothing uint8 = iota // tracked only for idle timeouts (no limit)
	inWindow               // in the admission window
	inMain                 // in the main area
)

// entry is the bookkeeping of one active entity that a hit on it reads and writes. Entries
// live in an arena and link to each other by index, so that moving an entity within a list
// touches no allocator and the garbage collector scans no pointers; they are kept small so
// that the entries a hit touches (its own and its neighbours') are likely in cache.
type entry struct {
	accesses   int64 // access count (least-frequently-used areas)
	seen       int64 // last access, nanoseconds since the policy's origin (idle timeouts)
	prev, next int32 // links in the area's list (a recency list, a segment or a frequency bucket)
	bucket     int32 // frequency bucket (least-frequently-used areas)
	level      uint8 // segment (segmented least-recently-used areas)
	where      uint8 // inNothing, inWindow or inMain
}

// coldEntry is the rest of an entity's bookkeeping, parallel to its entry: what only idle
// timeouts combined with a limit, and admission decisions, need.
type coldEntry struct {
	idlePrev, idleNext int32  // links in the overall recency list, when entries are also in an area
	hash               uint32 // the key's hash, for the frequency sketch
}

// arena holds the entries of one policy. Freed entries are chained through next and reused.
type arena struct {
	entries []entry
	cold    []coldEntry
	free    int32
}

func newArena() *arena { return &arena{free: none} }

// alloc returns the index of a zeroed, unlinked entry.
func (a *arena) alloc() int32 {
	if i := a.free; i != none {
		a.free = a.entries[i].next
		a.entries[i] = entry{prev: none, next: none, bucket: none}
		a.cold[i] = coldEntry{idlePrev: none, idleNext: none}
		return i
	}
	a.entries = append(a.entries, entry{prev: none, next: none, bucket: none})
	a.cold = append(a.cold, coldEntry{idlePrev: none, idleNext: none})
	return int32(len(a.entries) - 1)
}

// release returns entry i to the free chain; it must already be unlinked from every list.
func (a *arena) release(i int32) {
	a.entries[i].next = a.free
	a.free = i
}

// list is a doubly linked list of arena entries through their prev/next links, ordered from
// front (least recent) to back (most recent).
type list struct {
	head, tail int32
	n          int
}

func newList() list { return list{head: none, tail: none} }

func (l *list) pushBack(es []entry, i int32) {
	es[i].prev = l.tail
	es[i].next = none
	if l.tail == none {
		l.head = i
	} else {
		es[l.tail].next = i
	}
	l.tail = i
	l.n++
}

func (l *list) remove(es []entry, i int32) {
	p, n := es[i].prev, es[i].next
	if p == none {
		l.head = n
	} else {
		es[p].next = n
	}
	if n == none {
		l.tail = p
	} else {
		es[n].prev = p
	}
	es[i].prev, es[i].next = none, none
	l.n--
}

func (l *list) moveToBack(es []entry, i int32) {
	if l.tail == i {
		return
	}
	l.remove(es, i)
	l.pushBack(es, i)
}
