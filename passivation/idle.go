package passivation

import "time"

// IdleTracker passivates entities that have received no message for a timeout: the
// `default-idle-strategy` on its own. Every [Policy] with an idle timeout embeds the same
// bookkeeping (an overall recency list with the time of each entity's last message); this
// type is the narrow interface for callers that need nothing else.
type IdleTracker[K comparable] struct {
	p *Policy[K]
}

// NewIdleTracker returns a tracker that reports entities idle for longer than timeout;
// call Sweep every interval (0 means timeout/2, as `idle-entity.interval = default`).
func NewIdleTracker[K comparable](timeout, interval time.Duration) (*IdleTracker[K], error) {
	s := Settings{Strategy: "idle", Idle: IdleSettings{Timeout: timeout, Interval: interval}}
	if timeout <= 0 {
		return nil, &ConfigError{Key: "passivation.idle.idle-entity.timeout", Value: timeout, Allowed: "must be a positive duration"}
	}
	p, err := NewPolicy[K](s, nil)
	if err != nil {
		return nil, err
	}
	return &IdleTracker[K]{p: p}, nil
}

// Touch records a message to entity id at time now.
func (t *IdleTracker[K]) Touch(id K, now time.Time) { t.p.Access(id, now, nil) }

// Remove forgets entity id.
func (t *IdleTracker[K]) Remove(id K) { t.p.Remove(id) }

// Sweep appends to out the entities idle for longer than the timeout at time now, least
// recently active first, and forgets them.
func (t *IdleTracker[K]) Sweep(now time.Time, out []K) []K { return t.p.Sweep(now, out) }

// Len returns the number of tracked entities.
func (t *IdleTracker[K]) Len() int { return t.p.Len() }

// Interval returns how often Sweep should run.
func (t *IdleTracker[K]) Interval() time.Duration { return t.p.interval }

// idleList is the overall recency list of a policy with both an idle timeout and a limit:
// all its active entities, least recently accessed first, linked through idlePrev/idleNext
// so that an entity is in its area's list and in this one at the same time. Without a
// limit, entities are in no area and the policy links them through their area links.
type idleList struct {
	head, tail int32
}

func newIdleList() idleList { return idleList{head: none, tail: none} }

func (l *idleList) pushBack(es []coldEntry, i int32) {
	es[i].idlePrev = l.tail
	es[i].idleNext = none
	if l.tail == none {
		l.head = i
	} else {
		es[l.tail].idleNext = i
	}
	l.tail = i
}

func (l *idleList) remove(es []coldEntry, i int32) {
	p, n := es[i].idlePrev, es[i].idleNext
	if p == none {
		l.head = n
	} else {
		es[p].idleNext = n
	}
	if n == none {
		l.tail = p
	} else {
		es[n].idlePrev = p
	}
	es[i].idlePrev, es[i].idleNext = none, none
}

func (l *idleList) moveToBack(es []coldEntry, i int32) {
	if l.tail == i {
		return
	}
	l.remove(es, i)
	l.pushBack(es, i)
}

// idleAdd starts tracking the idleness of new entry i, accessed at t (see since).
func (p *Policy[K]) idleAdd(i int32, t int64) {
	p.arena.entries[i].seen = t
	if p.limited {
		p.idleList.pushBack(p.arena.cold, i)
	} else {
		p.recency.pushBack(p.arena.entries, i)
	}
}

// idleTouch records an access at t to entry i.
func (p *Policy[K]) idleTouch(i int32, t int64) {
	p.arena.entries[i].seen = t
	if p.limited {
		p.idleList.moveToBack(p.arena.cold, i)
	} else {
		p.recency.moveToBack(p.arena.entries, i)
	}
}

// idleRemove stops tracking the idleness of entry i.
func (p *Policy[K]) idleRemove(i int32) {
	if p.limited {
		p.idleList.remove(p.arena.cold, i)
	} else {
		p.recency.remove(p.arena.entries, i)
	}
}

// idleOldest returns the least recently accessed entry, or none.
func (p *Policy[K]) idleOldest() int32 {
	if p.limited {
		return p.idleList.head
	}
	return p.recency.head
}
