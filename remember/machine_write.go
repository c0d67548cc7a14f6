package remember

import (
	"fmt"
	"slices"
	"time"

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

// Write stores ws (checked by CheckWrites) once enough replicas, this one included, hold
// them on disk (see Required with WriteMajorityPlus). Calls made while rounds are in flight
// are group-committed: their writes go out together in the next round, in one frame per
// replica and one disk apply per replica, and each call is answered with its batch.
//
// Each write gets a version (its Epoch, the next counter of this member's clock, this
// member's id) and is stored on each replica by the merge rule. A write refused by replicas
// for fencing fails its call with a *FencedError once the quorum can no longer be reached;
// too few answers within Timeout, with a *QuorumError. A failed call's writes may still be
// stored on some replicas (and spread from there).
//
// Keys under VoterPrefixes are written alone: a call mixing them with others fails at once.
func (m *Machine) Write(now time.Time, ws []Write) CallID {
	m.now = now
	m.nextCall++
	m.stats.Writes += uint64(len(ws))
	for i := 1; i < len(ws); i++ {
		if w := ws[i]; (m.quorumOf(w.Key) == ofVoters) != (m.quorumOf(ws[0].Key) == ofVoters) {
			m.answerCall(Answer{Call: m.nextCall, Err: fmt.Errorf("remember: a write of %q and %q: keys of the voters' quorum (VoterPrefixes) are written alone", ws[0].Key, w.Key)})
			return m.nextCall
		}
	}
	m.writeQueue = append(m.writeQueue, &writeCall{id: m.nextCall, writes: ws})
	m.startWrites()
	return m.nextCall
}

// writeCall is one Write call in a round.
type writeCall struct {
	id     CallID
	writes []Write

	need    int // replicas that must store every write of the call
	t       tally
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

// startWrites starts rounds while the window has room and calls wait: a batch's writes of
// the voters' keys (VoterPrefixes) in a round of their own, asked of the voters.
func (m *Machine) startWrites() {
	for m.writeRounds < writeWindow && len(m.writeQueue) > 0 {
		var batch, voters []*writeCall
		batch, m.writeQueue = takeBatch(m.writeQueue, (*writeCall).weight)
		batch = slices.DeleteFunc(batch, func(c *writeCall) bool {
			if m.quorumOf(c.writes[0].Key) == ofVoters {
				voters = append(voters, c)
				return true
			}
			return false
		})
		if len(batch) > 0 {
			m.startWrite(batch, m.replicaSet(withPlus))
		}
		if len(voters) > 0 {
			m.startWrite(voters, m.replicaSet(ofVoters))
		}
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
	calls    []*writeCall
	recs     []entry
	owner    []int32 // call index of each record
	asked    []NodeID
	answered map[NodeID]bool
	failed   []NodeID
	until    time.Time
	timeout  time.Duration
	finished bool
}

// startWrite starts the round of a batch of calls asked of members: versions assigned, one
// frame to every other replica, one apply for the local disk (which counts only if this
// member is among members).
func (m *Machine) startWrite(calls []*writeCall, members []NodeID) {
	m.writeRounds++
	m.stats.WriteRounds++
	r := &writeRound{calls: calls, asked: members, answered: make(map[NodeID]bool, len(members)),
		until: m.now.Add(m.cfg.Timeout), timeout: m.cfg.Timeout}
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
		c.need = 0
		for _, w := range c.writes {
			c.need = max(c.need, m.need(len(members), m.cfg.WriteMajorityPlus, m.quorumOf(w.Key)))
			e := entry{rec: Record{Key: w.Key, Deleted: w.Delete, Version: Version{Epoch: w.Epoch, Counter: m.tick(), Writer: string(m.self)}}}
			if !w.Delete {
				e.rec.Value = w.Value
			}
			e.hash = valueHash(e.rec.Value, e.rec.Deleted)
			r.recs = append(r.recs, e)
			r.owner = append(r.owner, int32(i))
		}
	}
	r.req = m.request(r)
	if others := m.others(members); len(others) > 0 {
		env := &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{Records: toPBs(r.recs, false)}}}
		m.sendAll(others, env)
	}
	m.apply(applyOp{kind: opWrite, recs: r.recs}, func(res DiskResult) {
		var refused []refusal
		if res.err == nil {
			refused = res.applied[0].refused
		}
		r.count(m, m.self, refused, res.err)
	})
}

// sendAll sends one frame, encoded once, to every member of to.
func (m *Machine) sendAll(to []NodeID, env *pb.ReplicaEnvelope) {
	if len(to) == 0 {
		return
	}
	m.send(to[0], env)
	frame := m.out.Sends[len(m.out.Sends)-1].Frame
	for _, p := range to[1:] {
		m.sendFrame(p, frame)
	}
}

// serveWrite stores a peer's writes and acknowledges them once they are on disk.
func (m *Machine) serveWrite(from NodeID, req uint64, recs []entry) {
	m.observe(recs)
	m.apply(applyOp{kind: opWrite, recs: recs}, func(res DiskResult) {
		ack := &pb.ReplicaWriteAck{}
		if res.err != nil {
			ack.Error = truncate(res.err.Error(), 1024)
		} else {
			for _, r := range res.applied[0].refused {
				ack.Refused = append(ack.Refused, &pb.ReplicaRefusal{Index: uint32(r.index), Floor: r.need})
			}
		}
		m.send(from, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_WriteAck{WriteAck: ack}})
	})
}

func (r *writeRound) from(p NodeID) bool  { return slices.Contains(r.asked, p) }
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

// count takes one replica's acknowledgement: the writes it refused, or err when it stored
// none.
func (r *writeRound) count(m *Machine, from NodeID, refused []refusal, err error) {
	if r.finished || r.answered[from] || !r.from(from) {
		return
	}
	r.answered[from] = true
	if err != nil {
		r.failed = append(r.failed, from)
	}
	refusedCall := make(map[int32]bool, len(refused))
	for _, rf := range refused {
		if rf.index < 0 || rf.index >= len(r.recs) {
			continue // a confused peer: its answer counts as an acknowledgement of the rest
		}
		i := r.owner[rf.index]
		c := r.calls[i]
		if c.decided {
			continue // its error, fenced or not, is the caller's now: not to be changed
		}
		if !refusedCall[i] {
			refusedCall[i] = true
			c.t.refused++
		}
		c.t.need = max(c.t.need, rf.need)
		if c.fenced == nil {
			rec := &r.recs[rf.index]
			c.fenced = &FencedError{Key: rec.rec.Key, Epoch: rec.rec.Version.Epoch}
		}
		c.fenced.Need = c.t.need
	}
	for i, c := range r.calls {
		switch {
		case c.decided || refusedCall[int32(i)]:
		case err != nil:
			c.t.failed++
			if c.cause == nil {
				c.cause = err
			}
		default:
			c.t.ok++
		}
	}
	r.decide(m, false)
}

// decide answers the calls whose outcome is known (all of them when expired) and ends the
// round when none is left.
func (r *writeRound) decide(m *Machine, expired bool) {
	outstanding := len(r.asked) - len(r.answered)
	left := 0
	for _, c := range r.calls {
		if c.decided {
			continue
		}
		v := c.t.decide(c.need, outstanding)
		if v == pending && !expired {
			left++
			continue
		}
		c.decided = true
		var err error
		if v != succeeded {
			err = r.failure(c)
		}
		m.answerCall(Answer{Call: c.id, Err: err})
	}
	if left == 0 {
		r.finish(m)
	}
}

// failure is the error of a call that cannot reach its quorum.
func (r *writeRound) failure(c *writeCall) error {
	if c.fenced != nil {
		f := *c.fenced // the caller's copy: a later refusal does not change it
		return &f
	}
	e := &QuorumError{Op: "write", Key: c.writes[0].Key, Got: c.t.ok, Need: c.need, N: len(r.asked), Timeout: r.timeout,
		Failed: slices.Clone(r.failed), Cause: c.cause}
	for _, p := range r.asked {
		if !r.answered[p] {
			e.Missing = append(e.Missing, p)
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
	m.startWrites()
}
