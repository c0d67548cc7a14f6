package remember

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// Write stores ws and returns once enough replicas (this one included, see Required with
// Config.WriteMajorityPlus) hold them on disk. Concurrent calls are group-committed: their
// writes go out together, in one frame per replica and one Badger commit (one fsync) per
// replica, and each call is acknowledged with its batch.
//
// Each write gets a version (its Epoch, the next counter of this member's clock, this
// member's id) and is stored on each replica by the merge rule: a concurrent writer's higher
// version wins everywhere. A write refused by replicas for fencing makes the call fail with
// a *FencedError (errors.Is ErrFenced) once the quorum can no longer be reached; too few
// answers within Config.Timeout, with a *QuorumError (ErrNoQuorum). A failed call's writes
// may still be stored on some replicas (and spread from there): retry with the same writes,
// or overwrite. The writes of one call are not atomic across keys; writes of the same key
// in one call are ordered as given (the last wins).
func (s *Store) Write(ctx context.Context, ws ...Write) error {
	if len(ws) == 0 {
		return nil
	}
	if err := checkWrites(ws); err != nil {
		return err
	}
	for _, w := range ws[1:] {
		if (s.quorumOf(w.Key) == ofVoters) != (s.quorumOf(ws[0].Key) == ofVoters) {
			return fmt.Errorf("remember: a write of %q and %q: keys of the voters' quorum (Config.VoterPrefixes) are written alone", ws[0].Key, w.Key)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remember: write of %q: %w", ws[0].Key, err)
	}
	start := s.met.start()
	op := &writeOp{writes: ownCopy(ws), done: make(chan error, 1)}
	s.stats.writes.Add(uint64(len(ws)))
	s.writes.add(op)
	select {
	case err := <-op.done:
		s.met.wrote(start, err)
		return err
	case <-ctx.Done():
		s.met.wrote(start, ctx.Err())
		return fmt.Errorf("remember: write of %q: %w (it may still be stored)", ws[0].Key, ctx.Err())
	}
}

// ownCopy copies ws and their values (into one buffer): the round may outlive a Write
// call whose ctx ended, and the caller may then reuse its slices.
func ownCopy(ws []Write) []Write {
	n := 0
	for _, w := range ws {
		n += len(w.Value)
	}
	buf := make([]byte, 0, n)
	out := make([]Write, len(ws))
	for i, w := range ws {
		out[i] = w
		if w.Value != nil {
			start := len(buf)
			buf = append(buf, w.Value...)
			out[i].Value = buf[start:len(buf):len(buf)]
		}
	}
	return out
}

func checkWrites(ws []Write) error {
	if len(ws) > MaxWrites {
		return fmt.Errorf("remember: %d writes in one call (at most %d): %w", len(ws), MaxWrites, ErrTooLarge)
	}
	total := 0
	for _, w := range ws {
		if err := checkKey(w.Key); err != nil {
			return err
		}
		if len(w.Value) > MaxValueSize {
			return fmt.Errorf("remember: value of %q is %d bytes (at most %d): %w", w.Key, len(w.Value), MaxValueSize, ErrTooLarge)
		}
		total += len(w.Key) + len(w.Value)
	}
	if total > MaxWriteBytes {
		return fmt.Errorf("remember: one write call of %d bytes (at most %d): %w", total, MaxWriteBytes, ErrTooLarge)
	}
	return nil
}

func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("remember: empty key")
	}
	if len(key) > MaxKeySize {
		return fmt.Errorf("remember: key of %d bytes (at most %d): %w", len(key), MaxKeySize, ErrTooLarge)
	}
	return nil
}

// writeOp is one Write call in a round.
type writeOp struct {
	writes []Write
	done   chan error // buffered 1

	// Owned by the round (under its mutex).
	need    int // replicas that must store every write of the op
	t       tally
	fenced  *FencedError
	cause   error // a replica's error
	decided bool
}

func (op *writeOp) finish(err error) { op.done <- err }

// weight is what op adds to a round: writes and bytes of keys and values.
func (op *writeOp) weight() (n, bytes int) {
	for _, w := range op.writes {
		bytes += len(w.Key) + len(w.Value)
	}
	return len(op.writes), bytes
}

// startWrite starts the rounds of a batch of Write calls: one round for the writes to the
// Voters (Config.VoterPrefixes), one for the others.
func (s *Store) startWrite(ops []*writeOp, release func()) {
	var voters, others []*writeOp
	for _, op := range ops {
		if op.voters(s) {
			voters = append(voters, op)
		} else {
			others = append(others, op)
		}
	}
	if len(voters) == 0 || len(others) == 0 {
		s.startWriteRound(ops, s.replicasOf(s.quorumOf(ops[0].writes[0].Key)), release)
		return
	}
	var left atomic.Int32
	left.Store(2)
	both := func() {
		if left.Add(-1) == 0 {
			release()
		}
	}
	s.startWriteRound(others, s.members(), both)
	s.startWriteRound(voters, s.replicasOf(ofVoters), both)
}

// voters reports whether op writes a key of the Voters' quorum; an op mixing such keys with
// others is refused by Write.
func (op *writeOp) voters(s *Store) bool { return s.quorumOf(op.writes[0].Key) == ofVoters }

// startWriteRound starts one round of writes asked of members: versions assigned, one frame
// to every other replica, one operation for the local committer (which counts only if this
// member is among members).
func (s *Store) startWriteRound(ops []*writeOp, members []peer.ID, release func()) {
	s.stats.writeRounds.Add(1)
	r := &writeRound{
		s:        s,
		ops:      ops,
		asked:    members,
		answered: make(map[peer.ID]bool, len(members)),
		release:  release,
	}
	n := 0
	for _, op := range ops {
		n += len(op.writes)
	}
	s.met.writeRound(n)
	r.recs = make([]entry, 0, n)
	r.owner = make([]int32, 0, n)
	for i, op := range ops {
		op.need = 0
		for _, w := range op.writes {
			op.need = max(op.need, s.need(len(members), s.cfg.WriteMajorityPlus, s.quorumOf(w.Key)))
			e := entry{rec: Record{Key: w.Key, Deleted: w.Delete, Version: Version{Epoch: w.Epoch, Counter: s.clock.tick(), Writer: s.writer}}}
			if !w.Delete {
				e.rec.Value = w.Value
			}
			e.hash = valueHash(e.rec.Value, e.rec.Deleted)
			r.recs = append(r.recs, e)
			r.owner = append(r.owner, int32(i))
		}
	}
	r.id = s.calls.add(r)
	if r.id == 0 {
		r.abort(ErrClosed)
		return
	}
	r.mu.Lock()
	r.timer = time.AfterFunc(s.cfg.Timeout, r.expire)
	r.mu.Unlock()
	var frame []byte
	for _, m := range members {
		if m == s.self {
			continue // the local committer below
		}
		if frame == nil {
			frame = wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: r.id, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{Records: toPBs(r.recs, false)}}})
		}
		s.out.send(m, frame)
	}
	op := &applyOp{kind: opWrite, recs: r.recs, done: func(res applyResult) { r.answer(s.self, res.refused, res.err) }}
	if !s.com.submit(op) {
		r.abort(ErrClosed)
	}
}

// serveWrite stores a peer's writes and acknowledges them.
func (s *Store) serveWrite(from peer.ID, id uint64, recs []entry) {
	s.observe(recs)
	s.com.submit(&applyOp{kind: opWrite, recs: recs, done: func(res applyResult) {
		ack := &pb.ReplicaWriteAck{}
		for _, r := range res.refused {
			ack.Refused = append(ack.Refused, &pb.ReplicaRefusal{Index: uint32(r.index), Floor: r.need})
		}
		if res.err != nil {
			ack.Error = truncate(res.err.Error(), 1024)
		}
		s.out.send(from, wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: id, Msg: &pb.ReplicaEnvelope_WriteAck{WriteAck: ack}}))
	}})
}

// writeRound is a batch of writes waiting for the replicas' acknowledgements.
type writeRound struct {
	s       *Store
	id      uint64
	ops     []*writeOp
	recs    []entry
	owner   []int32 // op index of each record
	asked   []peer.ID
	timer   *time.Timer
	release func()

	mu       sync.Mutex
	answered map[peer.ID]bool
	failed   []peer.ID
	finished bool
}

func (r *writeRound) deliver(from peer.ID, env *pb.ReplicaEnvelope) {
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
	r.answer(from, refused, err)
}

// answer counts one replica's acknowledgement: refused writes, or err when it stored none.
func (r *writeRound) answer(from peer.ID, refused []refusal, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished || r.answered[from] || !r.wasAsked(from) {
		return
	}
	r.answered[from] = true
	if err != nil {
		r.failed = append(r.failed, from)
	}
	refusedOp := make(map[int32]bool, len(refused))
	for _, rf := range refused {
		if rf.index < 0 || rf.index >= len(r.recs) {
			continue // a confused peer: its answer counts as an acknowledgement of the rest
		}
		i := r.owner[rf.index]
		op := r.ops[i]
		if op.decided {
			continue // its error, fenced or not, is the caller's now: not to be changed
		}
		if !refusedOp[i] {
			refusedOp[i] = true
			op.t.refused++
		}
		op.t.need = max(op.t.need, rf.need)
		if op.fenced == nil {
			rec := &r.recs[rf.index]
			op.fenced = &FencedError{Key: rec.rec.Key, Epoch: rec.rec.Version.Epoch}
		}
		op.fenced.Need = op.t.need
	}
	for i, op := range r.ops {
		switch {
		case op.decided || refusedOp[int32(i)]:
		case err != nil:
			op.t.failed++
			if op.cause == nil {
				op.cause = err
			}
		default:
			op.t.ok++
		}
	}
	r.decide(false)
}

// decide finishes the ops whose outcome is known (all of them when expired) and the round
// when none is left.
func (r *writeRound) decide(expired bool) {
	outstanding := len(r.asked) - len(r.answered)
	left := 0
	for _, op := range r.ops {
		if op.decided {
			continue
		}
		v := op.t.decide(op.need, outstanding)
		if v == pending && !expired {
			left++
			continue
		}
		op.decided = true
		if v == succeeded {
			op.finish(nil)
		} else {
			op.finish(r.failure(op))
		}
	}
	if left == 0 {
		r.finish()
	}
}

// failure is the error of an op that cannot reach its quorum.
func (r *writeRound) failure(op *writeOp) error {
	if op.fenced != nil {
		return op.fenced
	}
	e := &QuorumError{Op: "write", Key: op.writes[0].Key, Got: op.t.ok, Need: op.need, N: len(r.asked), Timeout: r.s.cfg.Timeout,
		Failed: r.failed, Cause: op.cause}
	for _, m := range r.asked {
		if !r.answered[m] {
			e.Missing = append(e.Missing, m)
		}
	}
	return e
}

func (r *writeRound) wasAsked(p peer.ID) bool {
	for _, m := range r.asked {
		if m == p {
			return true
		}
	}
	return false
}

// expire fails what the round has not decided by its timeout.
func (r *writeRound) expire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finished {
		r.decide(true)
	}
}

// abort fails every op not decided yet with err.
func (r *writeRound) abort(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	for _, op := range r.ops {
		if !op.decided {
			op.decided = true
			op.finish(err)
		}
	}
	r.finish()
}

// finish ends the round (r.mu held): later answers are dropped, the batcher may start
// another round.
func (r *writeRound) finish() {
	if r.finished {
		return
	}
	r.finished = true
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.id != 0 {
		r.s.calls.remove(r.id)
	}
	r.release()
}
