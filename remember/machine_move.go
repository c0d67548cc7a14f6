package remember

import (
	"fmt"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// Moves of replica sets (see units.go for the protocol), page rounds and acknowledged
// rounds they are made of, and the marks that keep a late drop from removing a later copy.

// copyPageSize bounds the records of one page a move copies (and a unit sync compares).
const copyPageSize = 1024

// movePhase says where a move is.
type movePhase uint8

const (
	moveJoining      movePhase = iota + 1 // storing the joint configuration
	moveDraining                          // waiting for the rounds started before it
	moveCopying                           // copying pages to the new set
	moveSwitching                         // storing the new set alone
	moveDropDraining                      // waiting for the rounds started before the switch
	moveDropping                          // former replicas drop their copies
)

func (p movePhase) String() string {
	switch p {
	case moveJoining:
		return "joining"
	case moveDraining:
		return "draining"
	case moveCopying:
		return "copying"
	case moveSwitching:
		return "switching"
	case moveDropDraining, moveDropping:
		return "dropping"
	}
	return ""
}

// unitMove is a move of one unit's records, run by its host.
type unitMove struct {
	u       Unit
	us      *unitState
	mark    moveMark
	phase   movePhase
	started time.Time
	drainTo uint64 // rounds started up to this one must end first
	prefix  int    // the unit's prefix being copied
	after   string // the last key copied under it
	copied  int
}

// moveMark orders the copies and drops of a unit: the host's allocation epoch, then the
// move's sequence number on that host.
type moveMark struct{ epoch, seq uint64 }

func (a moveMark) after(b moveMark) bool {
	return a.epoch > b.epoch || (a.epoch == b.epoch && a.seq > b.seq)
}

// roundLog numbers the rounds (reads and writes) and knows which are in flight: a move
// copies only once the rounds started under the configuration before it have ended.
type roundLog struct {
	last uint64
	open map[uint64]struct{}
}

func (l *roundLog) start() uint64 {
	if l.open == nil {
		l.open = map[uint64]struct{}{}
	}
	l.last++
	l.open[l.last] = struct{}{}
	return l.last
}

func (l *roundLog) end(seq uint64) { delete(l.open, seq) }

// drained reports whether every round started up to seq has ended.
func (l *roundLog) drained(seq uint64) bool {
	for s := range l.open {
		if s <= seq {
			return false
		}
	}
	return true
}

// considerMove queues a move of hosted unit u when its records should be elsewhere, an
// earlier move is unfinished, or former replicas still hold copies.
func (m *Machine) considerMove(u Unit) {
	us := m.units[u]
	if us == nil || !us.hosted || us.cfg == nil || us.move != nil || us.queued || m.place == nil {
		return
	}
	if !us.retryAt.IsZero() && m.now.Before(us.retryAt) {
		return
	}
	cfg := us.cfg
	target := m.place.Keep(m.place.Target(u, m.self), cfg.Set)
	if !cfg.moving() && (len(target) == 0 || equalSets(cfg.Set, target)) && len(m.droppable(cfg)) == 0 {
		return
	}
	us.queued = true
	m.moveQueue = append(m.moveQueue, u)
	m.startMoves()
}

// droppable returns the former replicas of cfg that owe a drop of their copies and can be
// asked now: those no longer members stay in cfg.Gone (see dropGone) until they come back.
func (m *Machine) droppable(cfg *UnitConfig) []NodeID {
	return slices.DeleteFunc(slices.Clone(cfg.Gone), func(p NodeID) bool {
		return slices.Contains(cfg.Set, p) || slices.Contains(cfg.Next, p) || p != m.self && m.place != nil && !m.place.Has(p)
	})
}

// owesDrop reports whether one of target still owes a drop of its copies of cfg's unit.
func (m *Machine) owesDrop(cfg *UnitConfig, target []NodeID) bool {
	return slices.ContainsFunc(m.droppable(cfg), func(p NodeID) bool { return slices.Contains(target, p) })
}

// startMoves starts queued moves while slots are free.
func (m *Machine) startMoves() {
	for len(m.moves) < m.cfg.MaxMoves && len(m.moveQueue) > 0 {
		u := m.moveQueue[0]
		m.moveQueue = m.moveQueue[1:]
		us := m.units[u]
		if us == nil || !us.queued {
			continue
		}
		us.queued = false
		if (!us.hosted && !us.caretaker) || us.cfg == nil || us.move != nil {
			continue
		}
		m.startMove(u, us)
	}
}

// startMove starts moving u: the joint configuration first, or the rest of an unfinished
// move, or only the drops.
func (m *Machine) startMove(u Unit, us *unitState) {
	m.moveSeq++
	m.stats.MovesStarted++
	mv := &unitMove{u: u, us: us, mark: moveMark{epoch: us.epoch, seq: m.moveSeq}, started: m.now}
	us.move = mv
	m.moves = append(m.moves, mv)
	cfg := *us.cfg
	target := m.place.Keep(m.place.Target(u, m.self), cfg.Set)
	if us.caretaker {
		target = m.place.Keep(m.place.Repair(u, cfg.Set), cfg.Set)
	}
	joint := func(next UnitConfig) {
		mv.phase = moveJoining
		m.writeConfig(u, next, us.epoch, func(err error) {
			if !m.current(mv) {
				return
			}
			if err != nil {
				m.moveFailed(mv, err)
				return
			}
			us.cfg = &next
			if next.moving() {
				m.drain(mv, moveDraining)
			} else {
				m.drain(mv, moveDropDraining)
			}
		})
	}
	switch {
	case m.owesDrop(&cfg, target):
		// A former replica that comes back (a member downed, or restarted, keeps its id and
		// its disk) still holds its copies, and live records among them may be ones whose
		// tombstones the set collected since: copied to, it would merge them back by
		// anti-entropy. It drops them before it joins the set again.
		m.drain(mv, moveDropDraining)
	case cfg.moving() && (len(target) == 0 || equalSets(cfg.Next, target)):
		m.drain(mv, moveDraining) // finish it
	case len(target) > 0 && !equalSets(cfg.Set, target):
		// A move left unfinished to a set that is no longer the one (its members went) is
		// redone to the right one: every write acknowledged in its joint configuration is on
		// a majority of the old set, which stays. Members of the abandoned new set may hold
		// copies: they are dropped later.
		gone := append(slices.Clone(cfg.Gone), minus(cfg.Next, append(slices.Clone(cfg.Set), target...))...)
		joint(cfg.then(UnitConfig{Set: cfg.Set, Next: target, Gone: minus(gone, target)}))
	case cfg.moving():
		// The set it should have is the old one again: the move is called off.
		joint(cfg.then(UnitConfig{Set: cfg.Set, Gone: minus(append(slices.Clone(cfg.Gone), cfg.Next...), cfg.Set)}))
	default:
		m.drain(mv, moveDropDraining)
	}
}

// drain waits for the rounds started so far to end, then goes on with phase.
func (m *Machine) drain(mv *unitMove, phase movePhase) {
	mv.phase, mv.drainTo = phase, m.rounds.last
	m.stepMove(mv)
}

// stepMove moves a draining move on once its rounds have ended.
func (m *Machine) stepMove(mv *unitMove) {
	if (mv.phase != moveDraining && mv.phase != moveDropDraining) || !m.rounds.drained(mv.drainTo) {
		return
	}
	if mv.phase == moveDraining {
		mv.phase, mv.prefix, mv.after = moveCopying, 0, ""
		m.copyPage(mv)
		return
	}
	mv.phase = moveDropping
	m.dropGone(mv)
}

// roundEnded moves draining moves on.
func (m *Machine) roundEnded() {
	for _, mv := range slices.Clone(m.moves) {
		m.stepMove(mv)
	}
}

// current reports whether mv is still its unit's move.
func (m *Machine) current(mv *unitMove) bool {
	return m.units[mv.u] == mv.us && mv.us.move == mv && (mv.us.hosted || mv.us.caretaker)
}

// copyPage copies the next page of the unit's records from a majority of the old set to a
// majority of the new one.
func (m *Machine) copyPage(mv *unitMove) {
	prefixes := m.layout.Prefixes(mv.u)
	if mv.prefix >= len(prefixes) {
		m.switchSet(mv)
		return
	}
	cfg := mv.us.cfg
	m.readPage(single(mv.u, cfg.Set), prefixes[mv.prefix], mv.after, func(es []entry, next string, more bool, err error) {
		if !m.current(mv) {
			return
		}
		if err != nil {
			m.moveFailed(mv, fmt.Errorf("copy the records of %s: %w", mv.u, err))
			return
		}
		advance := func() {
			if more {
				mv.after = next
			} else {
				mv.prefix, mv.after = mv.prefix+1, ""
			}
			m.copyPage(mv)
		}
		if len(es) == 0 {
			advance()
			return
		}
		m.copyTo(mv, single(mv.u, cfg.Next), es, func(err error) {
			if !m.current(mv) {
				return
			}
			if err != nil {
				m.moveFailed(mv, fmt.Errorf("copy the records of %s: %w", mv.u, err))
				return
			}
			mv.copied += len(es)
			m.stats.Copied += uint64(len(es))
			advance()
		})
	})
}

// copyTo merges es on every member of q, acknowledged by a majority of each set.
func (m *Machine) copyTo(mv *unitMove, q quorum, es []entry, done func(error)) {
	r := m.newAckRound("copy", q, done)
	for _, p := range r.asked {
		if p == m.self {
			own := cloneEntries(es)
			m.markCopy(mv.u, mv.mark)
			m.apply(applyOp{kind: opMerge, recs: own}, func(res DiskResult) { r.take(m, m.self, res.err) })
			continue
		}
		m.send(p, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{
			Records: toPBs(es, false), Merge: true, MoveEpoch: mv.mark.epoch, MoveSeq: mv.mark.seq}}})
	}
}

func cloneEntries(es []entry) []entry {
	out := make([]entry, len(es))
	for i, e := range es {
		e.rec.Value = slices.Clone(e.rec.Value)
		out[i] = e
	}
	return out
}

// switchSet stores the new set alone, the old members that left it to drop their copies.
func (m *Machine) switchSet(mv *unitMove) {
	cfg := mv.us.cfg
	final := cfg.then(UnitConfig{Set: cfg.Next, Gone: minus(append(slices.Clone(cfg.Gone), minus(cfg.Set, cfg.Next)...), cfg.Next)})
	mv.phase = moveSwitching
	m.writeConfig(mv.u, final, mv.mark.epoch, func(err error) {
		if !m.current(mv) {
			return
		}
		if err != nil {
			m.moveFailed(mv, err)
			return
		}
		mv.us.cfg = &final
		m.stats.Moves++
		if mv.us.caretaker {
			m.endCare(mv, nil) // a caretaker drops nothing: the shard's next host does
			return
		}
		m.drain(mv, moveDropDraining)
	})
}

// dropGone has the former replicas drop their copies, and stores which did. A former
// replica that is no longer a member is not counted as dropped: a member downed or
// restarted comes back with its id and its disk, copies included. It stays in Gone, owing
// the drop, until it is back and acknowledges it. (The other way — a returning member drops
// by itself the copies of units whose sets do not name it — would race with a move that
// names it again: its drop, decided on the configuration it read, would remove the new
// copies; and a crash between its read and its drop leaves nothing that says it owes one.
// Gone is in the metadata group, written only after the drop was acknowledged.)
func (m *Machine) dropGone(mv *unitMove) {
	cfg := mv.us.cfg
	gone := m.droppable(cfg)
	if len(gone) == 0 {
		m.droppedAll(mv)
		return
	}
	left := len(gone)
	absent := minus(minus(cfg.Gone, gone), append(slices.Clone(cfg.Set), cfg.Next...))
	kept := slices.Clone(absent)
	for _, p := range gone {
		p := p
		done := func(err error) {
			if !m.current(mv) {
				return
			}
			if err != nil {
				kept = append(kept, p)
			}
			if left--; left > 0 {
				return
			}
			failed := minus(kept, absent)
			if len(failed) == len(gone) {
				m.moveFailed(mv, fmt.Errorf("drop the copies of %s on %s: no answer", mv.u, peerList(failed)))
				return
			}
			slices.Sort(kept)
			next := cfg.then(UnitConfig{Set: cfg.Set, Next: cfg.Next, Gone: kept})
			m.writeConfig(mv.u, next, mv.mark.epoch, func(err error) {
				if !m.current(mv) {
					return
				}
				if err != nil {
					m.moveFailed(mv, err)
					return
				}
				mv.us.cfg = &next
				if len(failed) > 0 {
					m.moveFailed(mv, fmt.Errorf("drop the copies of %s on %s: no answer", mv.u, peerList(failed)))
					return
				}
				m.droppedAll(mv)
			})
		}
		if p == m.self {
			m.dropLocal(mv.u, mv.mark, cfg.Gen, func(_ bool, err error) { done(err) }) // a disk fault: it still owes the drop
			continue
		}
		r := m.newAckRound("drop", single(mv.u, []NodeID{p}), done)
		m.send(p, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Drop{Drop: &pb.ReplicaDrop{
			Unit: unitPB(mv.u), MoveEpoch: mv.mark.epoch, MoveSeq: mv.mark.seq, ConfigGen: cfg.Gen}}})
	}
}

// droppedAll ends a move whose former replicas dropped their copies. A caretaker that
// dropped before its repair (startMove) looks at the unit again to repair it.
func (m *Machine) droppedAll(mv *unitMove) {
	if mv.us.caretaker {
		m.endCare(mv, nil)
		m.queueCare(mv.u, m.now)
		return
	}
	m.finishMove(mv)
}

// finishMove ends a move; the unit may move again at once if the members changed meanwhile.
func (m *Machine) finishMove(mv *unitMove) {
	m.endMove(mv)
	mv.us.lastErr = nil
	m.considerMove(mv.u)
	m.startMoves()
}

// moveFailed ends a move that failed a step: it starts over after a while.
func (m *Machine) moveFailed(mv *unitMove, err error) {
	if mv.us.caretaker {
		m.endCare(mv, err)
		return
	}
	m.endMove(mv)
	m.stats.MovesFailed++
	mv.us.lastErr = err
	mv.us.retryAt = m.now.Add(max(m.cfg.Timeout, time.Second))
	m.startMoves()
}

// endMove frees mv's slot.
func (m *Machine) endMove(mv *unitMove) {
	if mv.us.move == mv {
		mv.us.move = nil
	}
	m.moves = slices.DeleteFunc(m.moves, func(x *unitMove) bool { return x == mv })
}

// abandonMove drops u's move (its host changed): its callbacks find it is not current.
func (m *Machine) abandonMove(us *unitState) {
	if us.move != nil {
		m.stats.Abandoned++
		m.endMove(us.move)
		m.startMoves()
	}
	us.queued = false
}

// retryMoves considers again the units whose moves failed and waited long enough.
func (m *Machine) retryMoves() {
	for _, u := range m.hostedUnits() {
		us := m.units[u]
		if !us.retryAt.IsZero() && !m.now.Before(us.retryAt) {
			us.retryAt = time.Time{}
			m.considerMove(u)
		}
	}
}

// markCopy notes that a copy of move mark reached this replica for u: a drop of an earlier
// move must not remove it.
func (m *Machine) markCopy(u Unit, mark moveMark) {
	if mark.after(m.marks[u]) {
		m.marks[u] = mark
	}
	m.liftDropFence(u, mark)
}

// serveDrop drops this replica's copy of a unit for its host, unless a later move copied
// it here (or this member hosts the unit and is one of its replicas).
func (m *Machine) serveDrop(from NodeID, req uint64, msg *pb.ReplicaDrop) {
	u := unitOf(msg.Unit)
	m.dropLocal(u, moveMark{epoch: msg.MoveEpoch, seq: msg.MoveSeq}, msg.ConfigGen, func(kept bool, err error) {
		ack := &pb.ReplicaDropAck{Kept: kept}
		if err != nil {
			ack.Error = truncate(err.Error(), 1024)
		}
		m.send(from, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_DropAck{DropAck: ack}})
	})
}

// dropLocal removes every record of u from this replica, as of move mark and configuration
// generation gen (the one that no longer names it: dropfence.go).
func (m *Machine) dropLocal(u Unit, mark moveMark, gen uint64, done func(kept bool, err error)) {
	keep := func() bool {
		if us := m.units[u]; us != nil && us.hosted && us.cfg != nil && (slices.Contains(us.cfg.Set, m.self) || slices.Contains(us.cfg.Next, m.self)) {
			return true
		}
		return m.marks[u].after(mark)
	}
	if u.Meta() || keep() {
		done(true, nil)
		return
	}
	m.markCopy(u, mark)
	m.fenceDropped(u, gen, mark)
	// The unit's records are read once every apply queued so far is on disk (an empty
	// apply is the barrier: applies commit in order, reads do not wait for them): a write
	// taken just before the drop is dropped with the rest. Before, the read could miss one
	// still queued, and the discard (of the entries as read) kept it: a record on a member
	// no set names (reminder soak seed 20).
	m.apply(applyOp{kind: opMerge}, func(res DiskResult) {
		if res.err != nil {
			done(false, res.err)
			return
		}
		m.scanUnit(u, func(es []entry, err error) {
			if err != nil {
				done(false, err)
				return
			}
			if keep() {
				done(true, nil)
				return
			}
			if len(es) == 0 {
				done(false, nil)
				return
			}
			m.apply(applyOp{kind: opDiscard, recs: es}, func(res DiskResult) {
				if res.err == nil {
					m.stats.Dropped++
				}
				done(false, res.err)
			})
		})
	})
}

// scanUnit reads every entry this replica holds of u.
func (m *Machine) scanUnit(u Unit, done func([]entry, error)) {
	prefixes := m.layout.Prefixes(u)
	var all []entry
	var next func(i int)
	next = func(i int) {
		if i == len(prefixes) {
			done(all, nil)
			return
		}
		m.diskOp(DiskOp{Kind: DiskScan, prefix: prefixes[i]}, func(res DiskResult) {
			if res.err != nil {
				done(nil, res.err)
				return
			}
			for _, e := range res.entries {
				if !e.absent() {
					all = append(all, e)
				}
			}
			next(i + 1)
		})
	}
	next(0)
}

// unitPB and unitOf convert a unit for frames.
func unitPB(u Unit) *pb.ReplicaUnit { return &pb.ReplicaUnit{Type: u.Type, Shard: u.Shard} }
func unitOf(u *pb.ReplicaUnit) Unit { return Unit{Type: u.GetType(), Shard: u.GetShard()} }

// ackRound is a request to some replicas that each acknowledges (a move's copy, a drop):
// done gets nil once a majority of each of q's sets acknowledged, an error once that cannot
// happen or at the timeout.
type ackRound struct {
	op       string
	req      uint64
	q        quorum
	asked    []NodeID
	ok       map[NodeID]bool
	answered map[NodeID]bool
	cause    error
	until    time.Time
	done     func(error)
	finished bool
}

func (m *Machine) newAckRound(op string, q quorum, done func(error)) *ackRound {
	r := &ackRound{op: op, q: q, asked: q.members(m.self), ok: map[NodeID]bool{}, answered: map[NodeID]bool{},
		until: m.now.Add(m.cfg.Timeout), done: done}
	r.req = m.request(r)
	return r
}

func (r *ackRound) from(p NodeID) bool  { return slices.Contains(r.asked, p) }
func (r *ackRound) deadline() time.Time { return r.until }

func (r *ackRound) answer(m *Machine, from NodeID, env *pb.ReplicaEnvelope) {
	var msg string
	switch a := env.Msg.(type) {
	case *pb.ReplicaEnvelope_WriteAck:
		msg = a.WriteAck.Error
	case *pb.ReplicaEnvelope_DropAck:
		msg = a.DropAck.Error
	default:
		return
	}
	var err error
	if msg != "" {
		err = fmt.Errorf("replica %s: %s", from, msg)
	}
	r.take(m, from, err)
}

func (r *ackRound) take(m *Machine, from NodeID, err error) {
	if r.finished || r.answered[from] {
		return
	}
	r.answered[from] = true
	if err == nil {
		r.ok[from] = true
	} else if r.cause == nil {
		r.cause = err
	}
	r.decide(m, false)
}

func (r *ackRound) decide(m *Machine, expired bool) {
	v := r.q.decide(func(p NodeID) bool { return r.ok[p] }, func(p NodeID) bool { return !expired && !r.answered[p] })
	if v == pending && !expired {
		return
	}
	r.finished = true
	delete(m.pending, r.req)
	if v == succeeded {
		r.done(nil)
		return
	}
	e := &QuorumError{Op: r.op, Unit: r.q.unit.String(), Cause: r.cause}
	if expired {
		e.Timeout = m.cfg.Timeout
	}
	e.Got, e.Need, e.N = r.q.shortfall(func(p NodeID) bool { return r.ok[p] })
	for _, p := range r.asked {
		if !r.answered[p] {
			e.Missing = append(e.Missing, p)
		} else if !r.ok[p] {
			e.Failed = append(e.Failed, p)
		}
	}
	r.done(e)
}

func (r *ackRound) expire(m *Machine) {
	if !r.finished {
		r.decide(m, true)
	}
}

// readPage reads a page of the records under prefix after key after from q's members: done
// gets them merged once q is reached (every member asked, when q is nil... see pageRound),
// with the key to continue after and whether more follow.
func (m *Machine) readPage(q quorum, prefix, after string, done func(es []entry, next string, more bool, err error)) {
	r := &pageRound{q: q, asked: q.members(m.self), prefix: prefix, until: m.now.Add(m.cfg.Timeout),
		got: map[NodeID][]entry{}, more: map[NodeID]bool{}, answered: map[NodeID]bool{}, failed: map[NodeID]bool{}, done: done}
	r.seq = m.rounds.start()
	r.req = m.request(r)
	for _, p := range r.asked {
		if p == m.self {
			m.diskOp(DiskOp{Kind: DiskScan, prefix: prefix, after: after, limit: copyPageSize}, func(res DiskResult) {
				if res.err == nil && !m.counts(q.unit) {
					res.err = fmt.Errorf("remember: %w", ErrRefilling)
				}
				r.take(m, m.self, res.entries, true, res.more, res.err)
			})
			continue
		}
		m.send(p, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{
			Scan: true, Prefix: []byte(prefix), After: []byte(after), Limit: copyPageSize}}})
	}
}

// pageRound is a page of a scan read from a quorum: the pages of the replicas that answered
// merge up to the first key one of them may have more after.
type pageRound struct {
	req, seq uint64
	q        quorum
	asked    []NodeID
	prefix   string
	until    time.Time
	got      map[NodeID][]entry
	more     map[NodeID]bool
	answered map[NodeID]bool
	failed   map[NodeID]bool
	cause    error
	done     func([]entry, string, bool, error)
	finished bool
}

func (r *pageRound) from(p NodeID) bool  { return slices.Contains(r.asked, p) }
func (r *pageRound) deadline() time.Time { return r.until }

func (r *pageRound) answer(m *Machine, from NodeID, env *pb.ReplicaEnvelope) {
	msg, ok := env.Msg.(*pb.ReplicaEnvelope_Records)
	if !ok {
		return
	}
	var err error
	if msg.Records.Error != "" {
		err = fmt.Errorf("replica %s: %s", from, msg.Records.Error)
	}
	recs := fromPBs(msg.Records.Records, false)
	m.observe(recs)
	r.take(m, from, recs, msg.Records.Last || err != nil, msg.Records.More, err)
}

func (r *pageRound) take(m *Machine, from NodeID, part []entry, last, more bool, err error) {
	if r.finished || r.answered[from] {
		return
	}
	r.got[from] = append(r.got[from], part...)
	if !last {
		return
	}
	r.answered[from], r.more[from] = true, more
	if err != nil {
		r.failed[from] = true
		delete(r.got, from)
		if r.cause == nil {
			r.cause = err
		}
	}
	r.decide(m, false)
}

func (r *pageRound) decide(m *Machine, expired bool) {
	ok := func(p NodeID) bool { return r.answered[p] && !r.failed[p] }
	v := r.q.decide(ok, func(p NodeID) bool { return !expired && !r.answered[p] })
	if v == pending && !expired {
		return
	}
	r.finished = true
	delete(m.pending, r.req)
	m.rounds.end(r.seq)
	defer m.roundEnded()
	if v != succeeded {
		e := &QuorumError{Op: "scan", Key: r.prefix, Unit: r.q.unit.String(), Cause: r.cause}
		if expired {
			e.Timeout = m.cfg.Timeout
		}
		e.Got, e.Need, e.N = r.q.shortfall(ok)
		for _, p := range r.asked {
			if !r.answered[p] {
				e.Missing = append(e.Missing, p)
			} else if r.failed[p] {
				e.Failed = append(e.Failed, p)
			}
		}
		r.done(nil, "", false, e)
		return
	}
	es, next, more := mergePages(r.got, r.more)
	r.done(es, next, more, nil)
}

func (r *pageRound) expire(m *Machine) {
	if !r.finished {
		r.decide(m, true)
	}
}

// mergePages merges the replicas' pages (each sorted by key) by the merge rule, up to the
// lowest last key of a page that was cut at its limit: past it, a replica may hold keys it
// did not send. next is that key and more is true when some page was cut.
func mergePages(got map[NodeID][]entry, cut map[NodeID]bool) (es []entry, next string, more bool) {
	for p, page := range got {
		if cut[p] && len(page) > 0 {
			last := page[len(page)-1].rec.Key
			if !more || last < next {
				next = last
			}
			more = true
		}
	}
	merged := make(map[string]entry)
	for _, page := range got {
		for _, e := range page {
			if more && e.rec.Key > next {
				break
			}
			cur, ok := merged[e.rec.Key]
			if !ok {
				cur = entry{rec: Record{Key: e.rec.Key}}
			}
			merged[e.rec.Key] = merge(cur, e)
		}
	}
	es = make([]entry, 0, len(merged))
	for _, e := range merged {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b entry) int { return compareKeys(a.rec.Key, b.rec.Key) })
	return es, next, more
}
