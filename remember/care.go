package remember

import (
	"slices"
	"time"
)

// Caretaking: the replica sets of shards that no member hosts. A host moves its shard's
// records when members come and go (units.go); a shard that is not allocated anywhere (its
// type stopped, its host gone and the shard not yet started elsewhere) has none. If its
// replicas then leave one by one, nothing would replace them, and the records would be lost
// with the last of a majority. So when members depart, each replica of a shard reads the
// shard's configuration; when the member that wrote it departed too, the first of its set
// still present repairs it (when the writer is still a member, the writer does, once it
// hosts the shard no more): it stores the joint configuration with the configuration's own epoch, copies,
// and stores the repaired set, as a host does — but drops nothing, and keeps the other
// survivors (Placement.Repair). A host that starts meanwhile reads the configuration
// fenced by its higher epoch: the caretaker's next write is refused, and the host finishes
// or redoes the move as its own.

// careRetry is how long a caretaker waits to look again at a unit whose repair failed.
const careRetry = 5 * time.Second

// careAfterDepartures looks after the units this replica holds when members departed
// between placements prev and p (one configuration read per unit it holds and does not
// host: about ReplicationFactor/N of the shards).
func (m *Machine) careAfterDepartures(prev, p *Placement) {
	if prev == nil || m.cfg.AntiEntropyInterval <= 0 {
		return
	}
	var gone []NodeID
	for _, id := range prev.Members() {
		if i, ok := prev.byID[id]; ok && !prev.members[i].Away && !p.Present(id) {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return
	}
	// Which of them had a gone member in their set only their configurations say: each is
	// read, spread over an anti-entropy interval.
	held := make([]Unit, 0, len(m.hold.units))
	for u := range m.hold.units {
		held = append(held, u)
	}
	slices.SortFunc(held, compareUnits) // each draws its time from the machine's rng: in a fixed order
	for _, u := range held {
		if us := m.units[u]; us != nil && (us.hosted || us.caretaker) {
			continue
		}
		m.queueCare(u, m.now.Add(m.aeJitter()))
	}
}

// queueCare has u looked at at time at.
func (m *Machine) queueCare(u Unit, at time.Time) {
	if m.care == nil {
		m.care = map[Unit]time.Time{}
	}
	if t, ok := m.care[u]; !ok || at.Before(t) {
		m.care[u] = at
	}
}

// tickCare looks at the units due: reads each one's configuration, and repairs the set of
// those whose home is gone, when this replica is the first survivor.
func (m *Machine) tickCare() {
	var due []Unit
	for u, at := range m.care {
		if !m.now.Before(at) {
			due = append(due, u)
		}
	}
	slices.SortFunc(due, compareUnits)
	for _, u := range due {
		delete(m.care, u)
		if us := m.units[u]; us != nil && (us.hosted || us.caretaker || us.resolving) {
			continue
		}
		m.ownGet(m.layout.ConfigKey(u), 0, func(a Answer) { m.careFor(u, a) })
	}
}

// Care has this replica look at the configurations of units at once, as after a
// departure: a member that leaves calls it for the units whose sets still name it, so that
// those whose home is gone are repaired without it while it can still be copied from.
func (m *Machine) Care(now time.Time, units []Unit) {
	m.now = now
	for _, u := range units {
		if !u.Meta() {
			m.queueCare(u, now)
		}
	}
}

// careWake returns when a unit is next due a look (zero: none).
func (m *Machine) careWake() time.Time {
	var next time.Time
	for _, at := range m.care {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// careFor acts on u's configuration as read.
func (m *Machine) careFor(u Unit, a Answer) {
	if a.Err != nil {
		m.queueCare(u, m.now.Add(careRetry))
		return
	}
	if !a.Found || m.place == nil {
		return
	}
	cfg, err := DecodeUnitConfig(a.Record.Value)
	if err != nil {
		return
	}
	present := func(id NodeID) bool { return m.place.May(u, id) }
	// The member that wrote the configuration may still host the shard while it is a
	// member, leaving or away included (a leaving member hosts its shards until they are
	// handed off, which a partition can delay): it moves the set itself. A caretaker writes
	// with the configuration's own epoch, which fences every other host (a host reads the
	// configuration fenced by its newer epoch before it uses it) but not the writer: a
	// caretaker that took over would switch the set under writes the writer still makes
	// with the old one (runtime seed 61 lost an acknowledged increment so). The writer
	// itself, when it hosts the shard no more (tickCare skips the units it hosts), is its
	// caretaker: the home of a shard handed off and not allocated since, or a caretaker
	// again. Before, the set's home (its first member, or the next set's) had to be gone,
	// and a set whose home was a member hosting nothing (a move cut short by a handoff:
	// {home L} joint with {other}) was moved by nobody: a departing L waited out its
	// shutdown timeout (e2e TestAdmin/leave).
	writer := NodeID(a.Record.Version.Writer)
	if writer != m.self && m.place.Has(writer) {
		return
	}
	first := slices.IndexFunc(cfg.Set, present)
	// A replica that departs (it leaves: away, still answering) cares for the sets it is in
	// whose home is gone too: it is still there to copy from, and its vote must go before
	// it does (Care).
	departing := !present(m.self) && (slices.Contains(cfg.Set, m.self) || slices.Contains(cfg.Next, m.self))
	if writer != m.self && !departing && (first < 0 || cfg.Set[first] != m.self) {
		return // lost (no survivor), or another survivor cares for it
	}
	repaired := m.place.Keep(m.place.Repair(u, cfg.Set), cfg.Set)
	if len(repaired) == 0 || (!cfg.moving() && equalSets(repaired, cfg.Set)) {
		return
	}
	us := m.units.get(u)
	if us.hosted || us.caretaker || us.move != nil {
		return
	}
	us.caretaker, us.epoch, us.cfg = true, a.Record.Version.Epoch, &cfg
	us.queued = true
	m.moveQueue = append(m.moveQueue, u)
	m.startMoves()
}

// endCare ends a caretaker's move: done, or failed (looked at again later).
func (m *Machine) endCare(mv *unitMove, err error) {
	m.endMove(mv)
	us := mv.us
	us.caretaker, us.cfg = false, nil
	if err != nil {
		m.stats.MovesFailed++
		us.lastErr = err
		m.queueCare(mv.u, m.now.Add(careRetry))
	}
	m.units.release(mv.u)
	m.startMoves()
}
