package remember

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// Get returns key's record merged (by the merge rule) from a read quorum of replicas (see
// Required with Config.ReadMajorityPlus); found is false when no replica of the quorum holds
// the key or the winning record is a tombstone (then returned, Deleted set). Replicas of the
// quorum that lag are sent the merged record (read repair). Concurrent Get and GetFenced
// calls go out together in one frame per replica.
func (s *Store) Get(ctx context.Context, key string) (rec Record, found bool, err error) {
	return s.get(ctx, key, 0)
}

// GetFenced is Get in one round that first raises key's fence floor to epoch on every
// replica it reaches, durably. It returns once a read quorum has raised the floor and
// answered, so from then on a write of key with an epoch below epoch cannot reach a write
// quorum (the two quorums intersect): the writer gets ErrFenced. The record returned holds
// every write acknowledged before.
func (s *Store) GetFenced(ctx context.Context, key string, epoch uint64) (rec Record, found bool, err error) {
	return s.get(ctx, key, epoch)
}

func (s *Store) get(ctx context.Context, key string, fence uint64) (Record, bool, error) {
	if err := checkKey(key); err != nil {
		return Record{}, false, err
	}
	start := s.met.start()
	op := &readOp{key: key, fence: fence, done: make(chan readResult, 1)}
	s.stats.reads.Add(1)
	s.reads.add(op)
	select {
	case res := <-op.done:
		s.met.got(start, res.err)
		if res.err != nil {
			return Record{}, false, res.err
		}
		rec := res.e.rec
		rec.Key = key
		return rec, !rec.Version.IsZero() && !rec.Deleted, nil
	case <-ctx.Done():
		s.met.got(start, ctx.Err())
		return Record{}, false, fmt.Errorf("remember: read of %q: %w", key, ctx.Err())
	}
}

// Scan returns the live records of every key starting with prefix (all keys for ""),
// sorted by key, merged from a read quorum like Get; tombstones are left out. Replicas of
// the quorum that lag are repaired.
func (s *Store) Scan(ctx context.Context, prefix string) ([]Record, error) {
	if len(prefix) > MaxKeySize {
		return nil, fmt.Errorf("remember: scan prefix of %d bytes (at most %d): %w", len(prefix), MaxKeySize, ErrTooLarge)
	}
	s.stats.scans.Add(1)
	start := s.met.start()
	done := make(chan scanResult, 1)
	r := s.newReadRound("scan", prefix, s.quorumOf(prefix), func() {}, func(merged map[string]entry, err error) {
		done <- scanResult{merged, err}
	})
	if r == nil {
		return nil, fmt.Errorf("remember: scan of %q: %w", prefix, ErrClosed)
	}
	r.send(&pb.ReplicaRead{Scan: true, Prefix: []byte(prefix)})
	s.scanLocal(prefix, r.localAnswer)
	select {
	case res := <-done:
		s.met.scanned(start, res.err)
		if res.err != nil {
			return nil, res.err
		}
		out := make([]Record, 0, len(res.merged))
		for _, e := range res.merged {
			if !e.rec.Version.IsZero() && !e.rec.Deleted {
				out = append(out, e.rec)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
		return out, nil
	case <-ctx.Done():
		r.abort(ctx.Err())
		s.met.scanned(start, ctx.Err())
		return nil, fmt.Errorf("remember: scan of %q: %w", prefix, ctx.Err())
	}
}

type scanResult struct {
	merged map[string]entry
	err    error
}

// readOp is one Get or GetFenced call in a round.
type readOp struct {
	key   string
	fence uint64
	done  chan readResult // buffered 1
}

type readResult struct {
	e   entry
	err error
}

// startRead starts the round of a batch of Get and GetFenced calls: one round per quorum the
// batch's keys take (Config.MajorityPrefixes, VoterPrefixes), so that keys of smaller
// quorums do not wait for the larger.
func (s *Store) startRead(ops []*readOp, release func()) {
	byQuorum := map[quorum][]*readOp{}
	for _, op := range ops {
		q := s.quorumOf(op.key)
		byQuorum[q] = append(byQuorum[q], op)
	}
	var left atomic.Int32
	left.Store(int32(len(byQuorum)))
	each := func() {
		if left.Add(-1) == 0 {
			release()
		}
	}
	for _, q := range []quorum{withPlus, majority, ofVoters} {
		if len(byQuorum[q]) > 0 {
			s.startReadRound(byQuorum[q], q, each)
		}
	}
}

// startReadRound starts one round of reads of quorum q.
func (s *Store) startReadRound(ops []*readOp, q quorum, release func()) {
	s.stats.readRounds.Add(1)
	s.met.readRound(len(ops))
	keys := make([]string, len(ops))
	var fences []uint64
	for i, op := range ops {
		keys[i] = op.key
		if op.fence != 0 && fences == nil {
			fences = make([]uint64, len(ops))
		}
	}
	name := "read"
	if fences != nil {
		name = "fenced read"
		for i, op := range ops {
			fences[i] = op.fence
		}
	}
	r := s.newReadRound(name, keys[0], q, release, func(merged map[string]entry, err error) {
		for _, op := range ops {
			op.done <- readResult{e: merged[op.key], err: err}
		}
	})
	if r == nil {
		for _, op := range ops {
			op.done <- readResult{err: ErrClosed}
		}
		release()
		return
	}
	r.send(&pb.ReplicaRead{Keys: keyBytes(keys), Fences: fences})
	s.readLocal(keys, fences, r.localAnswer)
}

// readRound is a read, a batch of reads or a scan waiting for a quorum of answers. Each
// replica answers in one or more parts; the round merges the complete answers.
type readRound struct {
	s       *Store
	id      uint64
	op      string // for errors: "read", "fenced read", "scan"
	key     string // for errors: the first key or the prefix
	asked   []peer.ID
	need    int
	timer   *time.Timer
	release func()
	done    func(merged map[string]entry, err error) // called once, without locks held

	mu       sync.Mutex
	got      map[peer.ID][]entry
	answered map[peer.ID]bool
	failed   []peer.ID
	cause    error
	finished bool
}

// newReadRound registers a read round of quorum q; nil when the store is closing.
func (s *Store) newReadRound(op, key string, q quorum, release func(), done func(map[string]entry, error)) *readRound {
	members := s.replicasOf(q)
	r := &readRound{
		s: s, op: op, key: key, asked: members, release: release, done: done,
		need:     s.need(len(members), s.cfg.ReadMajorityPlus, q),
		got:      make(map[peer.ID][]entry, len(members)),
		answered: make(map[peer.ID]bool, len(members)),
	}
	r.id = s.calls.add(r)
	if r.id == 0 {
		return nil
	}
	r.mu.Lock()
	r.timer = time.AfterFunc(s.cfg.Timeout, r.expire)
	r.mu.Unlock()
	return r
}

// send asks every other replica.
func (r *readRound) send(m *pb.ReplicaRead) {
	var frame []byte
	for _, p := range r.asked {
		if p == r.s.self {
			continue // answers through localAnswer (counted only if it was asked)
		}
		if frame == nil {
			frame = wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: r.id, Msg: &pb.ReplicaEnvelope_Read{Read: m}})
		}
		r.s.out.send(p, frame)
	}
}

func (r *readRound) localAnswer(part []entry, last bool, err error) {
	r.answer(r.s.self, part, last, err)
}

func (r *readRound) deliver(from peer.ID, env *pb.ReplicaEnvelope) {
	m, ok := env.Msg.(*pb.ReplicaEnvelope_Records)
	if !ok {
		return
	}
	var err error
	if m.Records.Error != "" {
		err = fmt.Errorf("replica %s: %s", from, m.Records.Error)
	}
	recs := fromPBs(m.Records.Records, false)
	r.s.observe(recs)
	r.answer(from, recs, m.Records.Last || err != nil, err)
}

// answer takes a part of a replica's answer.
func (r *readRound) answer(from peer.ID, part []entry, last bool, err error) {
	r.mu.Lock()
	if r.finished || r.answered[from] || !r.wasAsked(from) {
		r.mu.Unlock()
		return
	}
	r.got[from] = append(r.got[from], part...)
	if !last {
		r.mu.Unlock()
		return
	}
	r.answered[from] = true
	if err != nil {
		r.failed = append(r.failed, from)
		delete(r.got, from)
		if r.cause == nil {
			r.cause = err
		}
	}
	t := tally{ok: len(r.answered) - len(r.failed)}
	switch t.decide(r.need, len(r.asked)-len(r.answered)) {
	case succeeded:
		for p := range r.got {
			if !r.answered[p] {
				delete(r.got, p) // part of an answer: merge complete ones only
			}
		}
		merged, repairs := mergeAnswers(r.got)
		r.finish()
		r.mu.Unlock()
		r.s.repair(repairs) // first: the caller owns the records once done returns them
		r.done(merged, nil)
	case failedNow:
		qe := r.failure()
		r.finish()
		r.mu.Unlock()
		r.done(nil, qe)
	default:
		r.mu.Unlock()
	}
}

func (r *readRound) wasAsked(p peer.ID) bool {
	for _, m := range r.asked {
		if m == p {
			return true
		}
	}
	return false
}

// failure is the error of a round that cannot reach its quorum (r.mu held).
func (r *readRound) failure() error {
	e := &QuorumError{Op: r.op, Key: r.key, Got: len(r.answered) - len(r.failed), Need: r.need, N: len(r.asked),
		Timeout: r.s.cfg.Timeout, Failed: r.failed, Cause: r.cause}
	for _, m := range r.asked {
		if !r.answered[m] {
			e.Missing = append(e.Missing, m)
		}
	}
	return e
}

func (r *readRound) expire() {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	qe := r.failure()
	r.finish()
	r.mu.Unlock()
	r.done(nil, qe)
}

func (r *readRound) abort(err error) {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	r.finish()
	r.mu.Unlock()
	r.done(nil, fmt.Errorf("remember: %s of %q: %w", r.op, r.key, err))
}

// finish ends the round (r.mu held).
func (r *readRound) finish() {
	r.finished = true
	r.got = nil
	if r.timer != nil {
		r.timer.Stop()
	}
	r.s.calls.remove(r.id)
	r.release()
}

// mergeAnswers merges the replicas' answers by the merge rule and returns, per replica,
// the merged entries it lacks (for read repair).
func mergeAnswers(got map[peer.ID][]entry) (merged map[string]entry, repairs map[peer.ID][]entry) {
	merged = make(map[string]entry)
	for _, es := range got {
		for _, e := range es {
			cur, ok := merged[e.rec.Key]
			if !ok {
				cur = entry{rec: Record{Key: e.rec.Key}}
			}
			merged[e.rec.Key] = merge(cur, e)
		}
	}
	for p, es := range got {
		has := make(map[string]int, len(es))
		for i := range es {
			has[es[i].rec.Key] = i
		}
		for key, m := range merged {
			var mine entry
			if i, ok := has[key]; ok {
				mine = es[i]
			}
			if !sameState(&mine, &m) {
				if repairs == nil {
					repairs = make(map[peer.ID][]entry)
				}
				repairs[p] = append(repairs[p], m)
			}
		}
	}
	return merged, repairs
}

// repair sends replicas the merged entries they lack: peers in repair frames, this replica
// through its committer. Nobody waits for it.
func (s *Store) repair(repairs map[peer.ID][]entry) {
	for p, es := range repairs {
		s.stats.repairs.Add(uint64(len(es)))
		if p == s.self {
			// Possibly on the committer's own goroutine (a fenced read answered there):
			// never wait for room in its queue. A repair dropped here is anti-entropy's.
			// The committer encodes later: give it values the caller cannot change.
			own := make([]entry, len(es))
			for i, e := range es {
				e.rec.Value = bytes.Clone(e.rec.Value)
				own[i] = e
			}
			s.com.trySubmit(&applyOp{kind: opMerge, recs: own, done: func(applyResult) {}})
			continue
		}
		parts(es, func(part []entry, _ bool) {
			if len(part) > 0 {
				s.out.send(p, repairFrame(part))
			}
		})
	}
}

// serveReadRequest answers a peer's read or scan.
func (s *Store) serveReadRequest(from peer.ID, id uint64, m *pb.ReplicaRead) {
	emit := func(part []entry, last bool, err error) { s.out.send(from, recordsFrame(id, part, last, err)) }
	keys := make([]string, len(m.Keys))
	for i, k := range m.Keys {
		keys[i] = string(k)
	}
	if len(m.Fences) > 0 {
		s.readLocal(keys, m.Fences, emit) // through the committer: does not block here
		return
	}
	// A read of the disk may take a while (a large scan): off the stream's goroutine, a
	// few at a time (waiting here for a slot slows the peer down).
	select {
	case s.serve <- struct{}{}:
	case <-s.ctx.Done():
		return
	}
	ok := s.spawn(func() {
		defer func() { <-s.serve }()
		if m.Scan {
			s.scanLocal(string(m.Prefix), emit)
		} else {
			s.readLocal(keys, nil, emit)
		}
	})
	if !ok {
		<-s.serve
	}
}

// readLocal reads keys from this replica and emits the entries it holds. With fences, the
// keys' floors are raised first, durably, through the committer, and emit is called from
// there.
func (s *Store) readLocal(keys []string, fences []uint64, emit func([]entry, bool, error)) {
	if len(fences) > 0 {
		op := &applyOp{kind: opFence, keys: keys, fences: fences, done: func(res applyResult) {
			if res.err != nil {
				emit(nil, true, res.err)
				return
			}
			present(res.entries, emit)
		}}
		if !s.com.submit(op) {
			emit(nil, true, ErrClosed)
		}
		return
	}
	entries, err := readEntries(s.db, keys)
	if err != nil {
		emit(nil, true, fmt.Errorf("remember: read %s: %w", s.cfg.Dir, err))
		return
	}
	present(entries, emit)
}

// present emits the entries that are not absent, in parts.
func present(entries []entry, emit func([]entry, bool, error)) {
	out := entries[:0:0]
	for i := range entries {
		if !entries[i].absent() {
			out = append(out, entries[i])
		}
	}
	parts(out, func(part []entry, last bool) { emit(part, last, nil) })
}

// scanLocal emits this replica's entries under prefix, in parts.
func (s *Store) scanLocal(prefix string, emit func([]entry, bool, error)) {
	var part []entry
	size := 0
	err := iterate(s.db, prefix, true, func(e *entry) error {
		if n := recordSize(e); size+n > partBytes && len(part) > 0 {
			emit(part, false, nil)
			part, size = nil, 0
		}
		part = append(part, *e)
		size += recordSize(e)
		return nil
	})
	if err != nil {
		emit(nil, true, fmt.Errorf("remember: scan %s: %w", s.cfg.Dir, err))
		return
	}
	emit(part, true, nil)
}
