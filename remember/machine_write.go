package remember

import (
	"fmt"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// Rounds in flight per machine, for writes and for reads: enough to keep the disk and the
// network busy at once (one round's commit overlaps another's network wait) while letting
// calls pile up into large batches under load. (On 2 cores, 2 to 16 write rounds measured
// the same within noise.)
const (
	writeWindow = 4
	readWindow  = 2
)

// maxBatchWrites and maxBatchBytes bound one round (one frame per peer).
const (
	maxBatchWrites = 8192
	maxBatchBytes  = partBytes
)

// clockRestartGap is added to the highest counter stored when a machine starts. Counters
// this member handed out just before a crash may have reached other replicas without
// reaching its own disk; the gap (far more than a window of rounds can hand out) keeps its
// next writes ordered after them.
const clockRestartGap = 1 << 24

// Write stores ws (checked by CheckWrites) once a majority of the replica set of each
// write's unit holds it on disk (of both sets while the unit's replicas move). Calls made
// while rounds are in flight are group-committed: their writes go out together in the next
// round, in one frame per replica and one disk apply per replica, and each call is answered
// with its batch.
//
// Each write gets a version (its Epoch, the next counter of this member's clock, this
// member's id) and is stored on each replica by the merge rule. A write refused by replicas
// for fencing fails its call with a *FencedError once the quorum can no longer be reached;
// too few answers within Timeout, with a *QuorumError naming the replicas that did not
// answer. A failed call's writes may still be stored on some replicas (and spread from
// there).
func (m *Machine) Write(now time.Time, ws []Write) CallID {
	m.now = now
	id := m.newCall()
	m.write(id, ws)
	return id
}

// write makes call id, a Write.
func (m *Machine) write(id CallID, ws []Write) {
	m.stats.Writes += uint64(len(ws))
	var meta, units []Write
	for _, w := range ws {
		if m.layout.UnitOf(w.Key).Meta() {
			meta = append(meta, w)
		} else {
			units = append(units, w)
		}
	}
	switch {
	case len(units) == 0:
		m.writeMeta(id, meta, m.answerCall)
	case len(meta) == 0:
		m.writeUnits(id, ws)
	default:
		// Both: the metadata's in the group, the units' in rounds; answered when both are,
		// with the first error.
		left, first := 2, error(nil)
		both := func(a Answer) {
			if first == nil {
				first = a.Err
			}
			if left--; left == 0 {
				m.answerCall(Answer{Call: id, Err: first})
			}
		}
		part := m.newCall()
		m.own(part, both)
		m.writeUnits(part, units)
		m.writeMeta(id, meta, both)
	}
}

// writeUnits makes call id, writes of shard units' keys only, in quorum rounds.
func (m *Machine) writeUnits(id CallID, ws []Write) {
	c := &writeCall{id: id, writes: ws}
	units := make([]Unit, 0, 1)
	c.unitOf = make([]int, len(ws))
	for i, w := range ws {
		u := m.layout.UnitOf(w.Key)
		j := slices.Index(units, u)
		if j < 0 {
			j = len(units)
			units = append(units, u)
		}
		c.unitOf[i] = j
	}
	m.prepare(units, true, func(qs []quorum, err error) {
		if err != nil {
			m.answerCall(Answer{Call: c.id, Err: err})
			return
		}
		c.quorums = qs
		m.writeQueue = append(m.writeQueue, c)
		m.startWrites()
	})
}

// writeCall is one Write call in a round.
type writeCall struct {
	id      CallID
	writes  []Write
	unitOf  []int    // per write: its unit's quorum in quorums
	quorums []quorum // one per unit the call writes

	ok, no  map[NodeID]bool // replicas that stored every write of the call sent to them; that refused or failed
	fenced  *FencedError
	cause   error // a replica's error
	decided bool
}

// weight is what c adds to a round: writes and bytes of keys and values.
func (c *writeCall) weight() (n, bytes int) {
	for _, w := range c.writes {
		bytes += len(w.Key) + len(w.Value)
	}
	return len(c.writes), bytes
}

// startWrites starts rounds while the window has room and calls wait.
func (m *Machine) startWrites() {
	for m.writeRounds < writeWindow && len(m.writeQueue) > 0 {
		var batch []*writeCall
		batch, m.writeQueue = takeBatch(m.writeQueue, (*writeCall).weight)
		m.startWrite(batch)
	}
}

// takeBatch takes the calls at the head of queue that fit one round (at least one).
func takeBatch[T any](queue []T, weigh func(T) (n, bytes int)) (batch, rest []T) {
	items, bytes := weigh(queue[0])
	n := 1
	for ; n < len(queue); n++ {
		i, by := weigh(queue[n])
		if items+i > maxBatchWrites || bytes+by > maxBatchBytes {
			break
		}
		items, bytes = items+i, bytes+by
	}
	batch = slices.Clone(queue[:n])
	rest = queue[:copy(queue, queue[n:])]
	clear(queue[len(rest):])
	return batch, rest
}

// writeRound is a batch of writes waiting for the replicas' acknowledgements.
type writeRound struct {
	req      uint64
	seq      uint64 // in the round log
	calls    []*writeCall
	recs     []entry
	owner    []int32            // call index of each record
	dest     map[NodeID][]int32 // the records sent to each replica, in the order of its frame
	asked    []NodeID
	answered map[NodeID]bool
	failed   []NodeID
	units    []Unit // the shard units it writes (their hosts wait for it before comparing them)
	until    time.Time
	timeout  time.Duration
	finished bool
}

// startWrite starts the round of a batch of calls: versions assigned, one frame to every
// replica of the units written, one apply for the local disk.
func (m *Machine) startWrite(calls []*writeCall) {
	m.writeRounds++
	m.stats.WriteRounds++
	r := &writeRound{calls: calls, dest: map[NodeID][]int32{}, until: m.now.Add(m.cfg.Timeout), timeout: m.cfg.Timeout}
	r.seq = m.rounds.start()
	n := 0
	for _, c := range calls {
		n += len(c.writes)
	}
	if m.cfg.OnRound != nil {
		m.cfg.OnRound("write", n)
	}
	r.recs = make([]entry, 0, n)
	r.owner = make([]int32, 0, n)
	for i, c := range calls {
		c.ok, c.no = map[NodeID]bool{}, map[NodeID]bool{}
		members := make([][]NodeID, len(c.quorums))
		for j, q := range c.quorums {
			members[j] = q.members(m.self)
			if !q.unit.Meta() && !slices.Contains(r.units, q.unit) {
				r.units = append(r.units, q.unit)
			}
		}
		for j, w := range c.writes {
			e := entry{rec: Record{Key: w.Key, Deleted: w.Delete, Version: Version{Epoch: w.Epoch, Counter: m.tick(), Writer: string(m.self)}}}
			if !w.Delete {
				e.rec.Value = w.Value
			}
			e.hash = valueHash(e.rec.Value, e.rec.Deleted)
			idx := int32(len(r.recs))
			r.recs = append(r.recs, e)
			r.owner = append(r.owner, int32(i))
			for _, p := range members[c.unitOf[j]] {
				r.dest[p] = append(r.dest[p], idx)
			}
		}
	}
	r.asked = destinations(r.dest, m.self)
	r.answered = make(map[NodeID]bool, len(r.asked))
	for _, u := range r.units {
		us := m.units.get(u)
		us.writes++
		us.writeGen++
	}
	r.req = m.request(r)
	gens := roundGens(calls)
	var all []byte // the frame of every record, encoded once for the replicas that get all
	for _, p := range r.asked {
		if p == m.self {
			continue
		}
		idx := r.dest[p]
		if len(idx) == len(r.recs) {
			if all == nil {
				all = wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{
					Records: toPBs(r.recs, false), UnitGens: gens}}})
			}
			m.sendFrame(p, all)
			continue
		}
		m.send(p, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{
			Records: toPBs(pick(r.recs, idx), false), UnitGens: gens}}})
	}
	if idx, ok := r.dest[m.self]; ok {
		recs := pick(r.recs, idx)
		m.apply(applyOp{kind: opWrite, recs: recs}, func(res DiskResult) {
			var refused []refusal
			if res.err == nil {
				refused = res.applied[0].refused
			}
			r.count(m, m.self, refused, res.err)
		})
	}
}

// destinations returns the replicas of dest, self first, the others sorted.
func destinations[T any](dest map[NodeID]T, self NodeID) []NodeID {
	out := make([]NodeID, 0, len(dest))
	for p := range dest {
		if p != self {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	if _, ok := dest[self]; ok {
		out = append([]NodeID{self}, out...)
	}
	return out
}

// pick returns the entries of es at idx.
func pick(es []entry, idx []int32) []entry {
	if len(idx) == len(es) {
		return es
	}
	out := make([]entry, len(idx))
	for i, j := range idx {
		out[i] = es[j]
	}
	return out
}

// serveWrite stores a peer's writes (merges them, for a move's copy) and acknowledges them
// once they are on disk.
func (m *Machine) serveWrite(from NodeID, req uint64, w *pb.ReplicaWrite) {
	recs := fromPBs(w.Records, false)
	m.observe(recs)
	kind := opWrite
	if w.Merge {
		kind = opMerge
		m.markCopy(m.layout.UnitOf(recs[0].rec.Key), moveMark{epoch: w.MoveEpoch, seq: w.MoveSeq})
	} else if err := m.staleWrite(recs, w.UnitGens); err != nil {
		m.send(from, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_WriteAck{WriteAck: &pb.ReplicaWriteAck{Error: truncate(err.Error(), 1024)}}})
		return
	}
	m.apply(applyOp{kind: kind, recs: recs}, func(res DiskResult) {
		ack := &pb.ReplicaWriteAck{}
		if res.err != nil {
			ack.Error = truncate(res.err.Error(), 1024)
		} else {
			for _, r := range res.applied[0].refused {
				ack.Refused = append(ack.Refused, &pb.ReplicaRefusal{Index: uint32(r.index), Floor: r.need})
			}
			m.noteLanded(recs, res.applied[0].refused)
		}
		m.send(from, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_WriteAck{WriteAck: ack}})
	})
}

func (r *writeRound) from(p NodeID) bool  { _, ok := r.dest[p]; return ok }
func (r *writeRound) deadline() time.Time { return r.until }

func (r *writeRound) answer(m *Machine, from NodeID, env *pb.ReplicaEnvelope) {
	ack, ok := env.Msg.(*pb.ReplicaEnvelope_WriteAck)
	if !ok {
		return
	}
	refused := make([]refusal, 0, len(ack.WriteAck.Refused))
	for _, rf := range ack.WriteAck.Refused {
		refused = append(refused, refusal{index: int(rf.Index), need: rf.Floor})
	}
	var err error
	if ack.WriteAck.Error != "" {
		err = fmt.Errorf("replica %s: %s", from, ack.WriteAck.Error)
	}
	r.count(m, from, refused, err)
}

// count takes one replica's acknowledgement: the writes it refused (by their place in its
// frame), or err when it stored none.
func (r *writeRound) count(m *Machine, from NodeID, refused []refusal, err error) {
	if r.finished || r.answered[from] || !r.from(from) {
		return
	}
	r.answered[from] = true
	if err != nil {
		r.failed = append(r.failed, from)
	}
	idx := r.dest[from]
	refusedCall := make(map[int32]bool, len(refused))
	for _, rf := range refused {
		if rf.index < 0 || rf.index >= len(idx) {
			continue // a confused peer: its answer counts as an acknowledgement of the rest
		}
		rec := idx[rf.index]
		i := r.owner[rec]
		c := r.calls[i]
		if c.decided {
			continue // its error, fenced or not, is the caller's now: not to be changed
		}
		refusedCall[i] = true
		need := rf.need
		if c.fenced != nil {
			need = max(need, c.fenced.Need)
		} else {
			e := &r.recs[rec]
			c.fenced = &FencedError{Key: e.rec.Key, Epoch: e.rec.Version.Epoch}
		}
		c.fenced.Need = need
	}
	sent := make(map[int32]bool, len(r.calls))
	for _, rec := range idx {
		sent[r.owner[rec]] = true
	}
	for i, c := range r.calls {
		switch {
		case c.decided || !sent[int32(i)]:
		case refusedCall[int32(i)]:
			c.no[from] = true
		case err != nil:
			c.no[from] = true
			if c.cause == nil {
				c.cause = err
			}
		default:
			c.ok[from] = true
		}
	}
	r.decide(m, false)
}

// decide answers the calls whose outcome is known (all of them when expired) and ends the
// round when none is left.
func (r *writeRound) decide(m *Machine, expired bool) {
	left := 0
	for _, c := range r.calls {
		if c.decided {
			continue
		}
		v := succeeded
		var short *quorum
		for k := range c.quorums {
			q := &c.quorums[k]
			qv := q.decide(func(p NodeID) bool { return c.ok[p] }, func(p NodeID) bool { return !expired && !r.answered[p] })
			if qv == failedNow {
				v, short = failedNow, q
				break
			}
			if qv == pending {
				v = pending
			}
		}
		if v == pending && !expired {
			left++
			continue
		}
		c.decided = true
		var err error
		if v != succeeded {
			if short == nil {
				for k := range c.quorums {
					if c.quorums[k].decide(func(p NodeID) bool { return c.ok[p] }, func(NodeID) bool { return false }) != succeeded {
						short = &c.quorums[k]
						break
					}
				}
			}
			err = r.failure(c, short, expired)
		}
		m.answerCall(Answer{Call: c.id, Err: err})
	}
	if left == 0 {
		r.finish(m)
	}
}

// failure is the error of a call that cannot reach quorum q; expired: the round waited its
// whole timeout for the members that did not answer.
func (r *writeRound) failure(c *writeCall, q *quorum, expired bool) error {
	if c.fenced != nil {
		f := *c.fenced // the caller's copy: a later refusal does not change it
		return &f
	}
	e := &QuorumError{Op: "write", Key: c.writes[0].Key, Cause: c.cause}
	if expired {
		e.Timeout = r.timeout
	}
	if q != nil {
		e.Unit = q.unit.String()
		e.Got, e.Need, e.N = q.shortfall(func(p NodeID) bool { return c.ok[p] })
		for _, p := range q.members("") {
			switch {
			case !r.answered[p]:
				e.Missing = append(e.Missing, p)
			case c.no[p]:
				e.Failed = append(e.Failed, p)
			}
		}
	}
	return e
}

func (r *writeRound) expire(m *Machine) {
	if !r.finished {
		r.decide(m, true)
	}
}

// finish ends the round: later answers are late, the next round may start.
func (r *writeRound) finish(m *Machine) {
	if r.finished {
		return
	}
	r.finished = true
	delete(m.pending, r.req)
	m.writeRounds--
	m.rounds.end(r.seq)
	for _, u := range r.units {
		if us := m.units[u]; us != nil {
			us.writes--
			m.units.release(u)
		}
	}
	m.roundEnded()
	m.startWrites()
}
