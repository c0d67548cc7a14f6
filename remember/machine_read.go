package remember

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// maxServing bounds the peers' reads this replica reads from its disk at once; more wait
// (a large scan may take a while).
const maxServing = 8

// Get reads key's record, merged by the merge rule from a read quorum of replicas (see
// Required with ReadMajorityPlus); Found is false when no replica of the quorum holds it
// or the winning record is a tombstone (then returned, Deleted set). Replicas of the quorum
// that lag are sent the merged record (read repair).
//
// With fence above 0 it is a fenced read (Store.GetFenced): the round first raises key's
// fence floor to fence on every replica it reaches, durably, and answers once a read
// quorum has raised it and answered, so from then on a write of key with an epoch below
// fence cannot reach a write quorum, and the record returned holds every write
// acknowledged before.
//
// Calls made while rounds are in flight go out together in the next round.
func (m *Machine) Get(now time.Time, key string, fence uint64) CallID {
	m.now = now
	m.nextCall++
	m.stats.Reads++
	m.readQueue = append(m.readQueue, &readCall{id: m.nextCall, key: key, fence: fence})
	m.startReads()
	return m.nextCall
}

// Scan reads the live records of every key starting with prefix (all keys for ""), sorted
// by key, merged from a read quorum like Get; tombstones are left out. It starts a round
// at once.
func (m *Machine) Scan(now time.Time, prefix string) CallID {
	m.now = now
	m.nextCall++
	m.stats.Scans++
	id := m.nextCall
	r := m.newReadRound("scan", prefix, m.quorumOf(prefix), false, func(merged map[string]entry, err error) {
		a := Answer{Call: id, Err: err}
		if err == nil {
			for _, e := range merged {
				if !e.rec.Version.IsZero() && !e.rec.Deleted {
					a.Records = append(a.Records, e.rec)
				}
			}
			sort.Slice(a.Records, func(i, j int) bool { return a.Records[i].Key < a.Records[j].Key })
		}
		m.answerCall(a)
	})
	m.sendAll(m.others(r.asked), &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Scan: true, Prefix: []byte(prefix)}}})
	m.diskOp(DiskOp{Kind: DiskScan, prefix: prefix}, r.localAnswer(m))
	return id
}

// readCall is one Get call in a round.
type readCall struct {
	id    CallID
	key   string
	fence uint64
}

// startReads starts rounds while the window has room and calls wait: one round per quorum a
// batch's keys take (MajorityPrefixes, VoterPrefixes), so that keys of smaller quorums do
// not wait for the larger.
func (m *Machine) startReads() {
	for m.readRounds < readWindow && len(m.readQueue) > 0 {
		var batch []*readCall
		batch, m.readQueue = takeBatch(m.readQueue, func(c *readCall) (int, int) { return 1, len(c.key) })
		var byQuorum [ofVoters + 1][]*readCall
		for _, c := range batch {
			q := m.quorumOf(c.key)
			byQuorum[q] = append(byQuorum[q], c)
		}
		for q, calls := range byQuorum {
			if len(calls) > 0 {
				m.startReadRound(calls, quorum(q))
			}
		}
	}
}

// startReadRound starts one round of Get calls of quorum q.
func (m *Machine) startReadRound(calls []*readCall, q quorum) {
	m.stats.ReadRounds++
	if m.cfg.OnRound != nil {
		m.cfg.OnRound("read", len(calls))
	}
	keys := make([]string, len(calls))
	var fences []uint64
	for i, c := range calls {
		keys[i] = c.key
		if c.fence != 0 && fences == nil {
			fences = make([]uint64, len(calls))
		}
	}
	name := "read"
	if fences != nil {
		name = "fenced read"
		for i, c := range calls {
			fences[i] = c.fence
		}
	}
	r := m.newReadRound(name, keys[0], q, true, func(merged map[string]entry, err error) {
		for _, c := range calls {
			a := Answer{Call: c.id, Err: err}
			if err == nil {
				e := merged[c.key]
				a.Record = e.rec
				a.Record.Key = c.key
				a.Found = !e.rec.Version.IsZero() && !e.rec.Deleted
			}
			m.answerCall(a)
		}
	})
	m.sendAll(m.others(r.asked), &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Keys: keyBytes(keys), Fences: fences}}})
	if fences != nil {
		m.apply(applyOp{kind: opFence, keys: keys, fences: fences}, func(res DiskResult) {
			if res.err == nil {
				res.entries = res.applied[0].entries
			}
			r.localAnswer(m)(res)
		})
	} else {
		m.diskOp(DiskOp{Kind: DiskRead, keys: keys}, r.localAnswer(m))
	}
}

// readRound is a read, a batch of reads or a scan waiting for a quorum of answers. Each
// replica answers in one or more parts; the round merges the complete answers.
type readRound struct {
	req      uint64
	op       string // for errors: "read", "fenced read", "scan"
	key      string // for errors: the first key or the prefix
	asked    []NodeID
	need     int
	q        quorum // the quorum it reads with (quorumOf)
	until    time.Time
	timeout  time.Duration
	windowed bool // counts in the read window
	done     func(merged map[string]entry, err error)

	got      map[NodeID][]entry
	answered map[NodeID]bool
	failed   []NodeID
	excused  []NodeID // refilling replicas the round does without (excuse)
	cause    error
	finished bool
}

// newReadRound registers a read round of quorum q. The local replica's answer counts only
// when it is among the replicas asked (not for the voters' keys on a member that is none).
func (m *Machine) newReadRound(op, key string, q quorum, windowed bool, done func(map[string]entry, error)) *readRound {
	members := m.replicaSet(q)
	r := &readRound{
		op: op, key: key, asked: members, done: done, windowed: windowed, q: q,
		need:     m.need(len(members), m.cfg.ReadMajorityPlus, q),
		until:    m.now.Add(m.cfg.Timeout),
		timeout:  m.cfg.Timeout,
		got:      make(map[NodeID][]entry, len(members)),
		answered: make(map[NodeID]bool, len(members)),
	}
	if windowed {
		m.readRounds++
	}
	r.req = m.request(r)
	return r
}

// localAnswer returns the handler of the local disk's answer: a failed one while this
// replica refills (machine_refill.go).
func (r *readRound) localAnswer(m *Machine) func(DiskResult) {
	return func(res DiskResult) {
		if m.rf.active && res.err == nil {
			res.err = fmt.Errorf("remember: %w", ErrRefilling)
		}
		var out []entry
		for i := range res.entries {
			if !res.entries[i].absent() {
				out = append(out, res.entries[i])
			}
		}
		r.take(m, m.self, out, true, res.err)
	}
}

func (r *readRound) from(p NodeID) bool  { return slices.Contains(r.asked, p) }
func (r *readRound) deadline() time.Time { return r.until }

func (r *readRound) answer(m *Machine, from NodeID, env *pb.ReplicaEnvelope) {
	msg, ok := env.Msg.(*pb.ReplicaEnvelope_Records)
	if !ok {
		return
	}
	var err error
	switch {
	case strings.HasSuffix(msg.Records.Error, ErrRefilling.Error()):
		err = fmt.Errorf("replica %s: remember: %w", from, ErrRefilling)
	case msg.Records.Error != "":
		err = fmt.Errorf("replica %s: %s", from, msg.Records.Error)
	}
	recs := fromPBs(msg.Records.Records, false)
	m.observe(recs)
	r.take(m, from, recs, msg.Records.Last || err != nil, err)
}

// take takes a part of a replica's answer.
func (r *readRound) take(m *Machine, from NodeID, part []entry, last bool, err error) {
	if r.finished || r.answered[from] || !r.from(from) {
		return
	}
	r.got[from] = append(r.got[from], part...)
	if !last {
		return
	}
	r.answered[from] = true
	if r.excuse(m, from, err) {
		delete(r.got, from)
	} else if err != nil {
		r.failed = append(r.failed, from)
		delete(r.got, from)
		if r.cause == nil {
			r.cause = err
		}
	}
	t := tally{ok: len(r.answered) - len(r.failed) - len(r.excused)}
	switch t.decide(r.need, len(r.asked)-len(r.answered)) {
	case succeeded:
		for p := range r.got {
			if !r.answered[p] {
				delete(r.got, p) // part of an answer: merge complete ones only
			}
		}
		merged, repairs := mergeAnswers(r.got)
		r.finish(m)
		m.repair(repairs)
		r.done(merged, nil)
	case failedNow:
		err := r.failure(m)
		r.finish(m)
		r.done(nil, err)
	}
}

// excuse takes a refilling replica (its answer failed with ErrRefilling) out of the round,
// when a quorum of the others is still enough: the round then needs a read quorum of the
// replicas left, as if the refilling one were not a replica. That is safe while every write
// quorum of the N replicas meets every read quorum of the N-k others — W + R(N-k) > N —
// which holds for one replica refilling with majorities (m(N) + m(N-1) > N), and for more
// with larger quorums. Without it, a read of quorum N (reference.conf's majority-plus on up
// to five replicas) fails while any replica refills: a member coming back from a rolling
// restart refills for a moment, and every entity starting then would fail to load.
func (r *readRound) excuse(m *Machine, from NodeID, err error) bool {
	if !errors.Is(err, ErrRefilling) {
		return false
	}
	n := len(r.asked)
	left := n - len(r.excused) - 1
	need := m.need(left, m.cfg.ReadMajorityPlus, r.q)
	if left == 0 || m.need(n, m.cfg.WriteMajorityPlus, r.q)+need <= n {
		return false
	}
	r.excused = append(r.excused, from)
	r.need = need
	return true
}

// failure is the error of a round that cannot reach its quorum.
func (r *readRound) failure(m *Machine) error {
	e := &QuorumError{Op: r.op, Key: r.key, Got: len(r.answered) - len(r.failed) - len(r.excused), Need: r.need, N: len(r.asked),
		Failed: slices.Clone(r.failed), Refilling: slices.Clone(r.excused), Cause: r.cause}
	if !r.until.After(m.now) {
		e.Timeout = r.timeout // it waited for the missing ones
	}
	for _, p := range r.asked {
		if !r.answered[p] {
			e.Missing = append(e.Missing, p)
		}
	}
	return e
}

func (r *readRound) expire(m *Machine) {
	if r.finished {
		return
	}
	err := r.failure(m)
	r.finish(m)
	r.done(nil, err)
}

// finish ends the round.
func (r *readRound) finish(m *Machine) {
	r.finished = true
	r.got = nil
	delete(m.pending, r.req)
	if r.windowed {
		m.readRounds--
		m.startReads()
	}
}

// mergeAnswers merges the replicas' answers by the merge rule and returns, per replica,
// the merged entries it lacks (for read repair).
func mergeAnswers(got map[NodeID][]entry) (merged map[string]entry, repairs map[NodeID][]entry) {
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
		for key, me := range merged {
			var mine entry
			if i, ok := has[key]; ok {
				mine = es[i]
			}
			if !sameState(&mine, &me) {
				if repairs == nil {
					repairs = make(map[NodeID][]entry)
				}
				repairs[p] = append(repairs[p], me)
			}
		}
	}
	return merged, repairs
}

// repair sends replicas the merged entries they lack: peers in repair frames, this replica
// through its disk. Nobody waits for it.
func (m *Machine) repair(repairs map[NodeID][]entry) {
	peers := make([]NodeID, 0, len(repairs))
	for p := range repairs {
		peers = append(peers, p)
	}
	slices.Sort(peers) // sends in an order that does not depend on a map's
	for _, p := range peers {
		es := repairs[p]
		slices.SortFunc(es, func(a, b entry) int { return compareKeys(a.rec.Key, b.rec.Key) })
		m.stats.Repairs += uint64(len(es))
		if p == m.self {
			// The caller owns the records once its answer goes out: the disk gets its own.
			own := make([]entry, len(es))
			for i, e := range es {
				e.rec.Value = bytes.Clone(e.rec.Value)
				own[i] = e
			}
			m.apply(applyOp{kind: opMerge, recs: own}, func(DiskResult) {})
			continue
		}
		parts(es, func(part []entry, _ bool) {
			if len(part) > 0 {
				m.sendFrame(p, repairFrame(part))
			}
		})
	}
}

func compareKeys(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// servedRead is a peer's read or scan waiting for the disk.
type servedRead struct {
	from NodeID
	req  uint64
	op   DiskOp
}

// serveRead answers a peer's read or scan. A fenced read goes through the disk's applies
// (raising the floors first, in order with writes); others wait for one of maxServing
// places.
func (m *Machine) serveRead(from NodeID, req uint64, msg *pb.ReplicaRead) {
	keys := make([]string, len(msg.Keys))
	for i, k := range msg.Keys {
		keys[i] = string(k)
	}
	if len(msg.Fences) > 0 {
		m.apply(applyOp{kind: opFence, keys: keys, fences: msg.Fences}, func(res DiskResult) {
			if res.err == nil {
				res.entries = res.applied[0].entries
			}
			m.answerRead(from, req, res)
		})
		return
	}
	if m.rf.active {
		m.answerRead(from, req, DiskResult{})
		return
	}
	op := DiskOp{Kind: DiskRead, keys: keys}
	if msg.Scan {
		op = DiskOp{Kind: DiskScan, prefix: string(msg.Prefix)}
	}
	m.serveQueue = append(m.serveQueue, servedRead{from: from, req: req, op: op})
	m.serveNext()
}

// serveNext starts the queued peers' reads that have a place.
func (m *Machine) serveNext() {
	for m.serving < maxServing && len(m.serveQueue) > 0 {
		sr := m.serveQueue[0]
		m.serveQueue = m.serveQueue[1:]
		m.serving++
		m.diskOp(sr.op, func(res DiskResult) {
			m.serving--
			m.answerRead(sr.from, sr.req, res)
			m.serveNext()
		})
	}
}

// answerRead sends a peer the entries it read that are not absent, in parts; an error while
// this replica refills (a fenced read has raised its floors all the same).
func (m *Machine) answerRead(to NodeID, req uint64, res DiskResult) {
	if m.rf.active && res.err == nil {
		res.err = fmt.Errorf("remember: %w", ErrRefilling)
	}
	if res.err != nil {
		m.sendFrame(to, recordsFrame(req, nil, true, res.err))
		return
	}
	out := res.entries[:0:0]
	for i := range res.entries {
		if !res.entries[i].absent() {
			out = append(out, res.entries[i])
		}
	}
	parts(out, func(part []entry, last bool) { m.sendFrame(to, recordsFrame(req, part, last, nil)) })
}
