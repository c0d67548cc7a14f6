package remember

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// maxServing bounds the peers' reads this replica reads from its disk at once; more wait
// (a large scan may take a while).
const maxServing = 8

// Get reads key's record, merged by the merge rule from a majority of the replica set of
// key's unit (of both sets while its replicas move); Found is false when no replica of the
// quorum holds it or the winning record is a tombstone (then returned, Deleted set).
// Replicas of the quorum that lag are sent the merged record (read repair).
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
	id := m.newCall()
	m.get(id, key, fence)
	return id
}

// get makes call id, a Get.
func (m *Machine) get(id CallID, key string, fence uint64) {
	m.stats.Reads++
	c := &readCall{id: id, key: key, fence: fence}
	if m.layout.UnitOf(key).Meta() {
		m.getMeta(c.id, key, fence)
		return
	}
	m.prepare([]Unit{m.layout.UnitOf(key)}, false, func(qs []quorum, err error) {
		if err != nil {
			m.answerCall(Answer{Call: c.id, Err: err})
			return
		}
		c.q = qs[0]
		m.readQueue = append(m.readQueue, c)
		m.startReads()
	})
}

// Scan reads the live records of every key starting with prefix, sorted by key, merged
// from a read quorum of the prefix's unit like Get; tombstones are left out. It starts a
// round at once. A prefix whose keys span units (Layout.UnitOfPrefix) fails with
// ErrSpansUnits: ScanAll reads those.
func (m *Machine) Scan(now time.Time, prefix string) CallID {
	m.now = now
	id := m.newCall()
	m.scan(id, prefix)
	return id
}

// scan makes call id, a Scan.
func (m *Machine) scan(id CallID, prefix string) {
	m.stats.Scans++
	c := &readCall{id: id, key: prefix, scan: true}
	u, ok := m.layout.UnitOfPrefix(prefix)
	if !ok {
		m.answerCall(Answer{Call: c.id, Err: fmt.Errorf("remember: scan of %q: %w", prefix, ErrSpansUnits)})
		return
	}
	if u.Meta() {
		m.scanMeta(c.id, prefix)
		return
	}
	m.prepare([]Unit{u}, false, func(qs []quorum, err error) {
		if err != nil {
			m.answerCall(Answer{Call: c.id, Err: err})
			return
		}
		c.q = qs[0]
		m.startReadRound([]*readCall{c}, false)
	})
}

// ScanAll reads the live records of every key starting with prefix from every member
// (Placement.Members), whatever their units, merged by the merge rule: an administrator's
// view across units, which needs no quorum. It answers once every member answered, or at
// Timeout with what came and the members that did not answer in Missing (the records only
// they hold are left out). It repairs nothing.
func (m *Machine) ScanAll(now time.Time, prefix string) CallID {
	m.now = now
	m.stats.Scans++
	c := &readCall{id: m.newCall(), key: prefix, scan: true, all: true}
	members := []NodeID{m.self}
	if m.place != nil {
		members = append(members, m.place.Members()...)
	}
	c.q = quorum{sets: [][]NodeID{slices.Compact(members)}}
	m.startReadRound([]*readCall{c}, false)
	return c.id
}

// readCall is one Get, Scan or ScanAll call.
type readCall struct {
	id    CallID
	key   string // or prefix
	fence uint64
	q     quorum
	scan  bool
	all   bool // ScanAll: every member, no quorum
	done  bool
}

// startReads starts rounds while the window has room and calls wait.
func (m *Machine) startReads() {
	for m.readRounds < readWindow && len(m.readQueue) > 0 {
		var batch []*readCall
		batch, m.readQueue = takeBatch(m.readQueue, func(c *readCall) (int, int) { return 1, len(c.key) })
		m.startReadRound(batch, true)
	}
}

// readRound is a batch of reads, a scan or a ScanAll waiting for the replicas' answers.
// Each replica is asked the keys of the calls whose quorum it is in, and answers in one or
// more parts; each call is decided by its own quorum.
type readRound struct {
	req      uint64
	seq      uint64
	op       string // for errors: "read", "fenced read", "scan"
	calls    []*readCall
	dest     map[NodeID][]int // the calls each replica is asked for
	asked    []NodeID
	until    time.Time
	timeout  time.Duration
	windowed bool // counts in the read window
	fenced   bool

	got      map[NodeID]map[string]entry
	answered map[NodeID]bool
	failed   map[NodeID]bool
	// refilling are the replicas that answered that they refill: they do not count, and a
	// set does without them where it may (quorum.decideReading), while they are asked again.
	refilling map[NodeID]bool
	cause     error
	left      int
	finished  bool
}

// startReadRound starts one round of calls: Gets (windowed), or one Scan or ScanAll.
func (m *Machine) startReadRound(calls []*readCall, windowed bool) {
	m.stats.ReadRounds++
	if m.cfg.OnRound != nil && windowed {
		m.cfg.OnRound("read", len(calls))
	}
	r := &readRound{op: "read", calls: calls, dest: map[NodeID][]int{}, windowed: windowed, left: len(calls),
		until: m.now.Add(m.cfg.Timeout), timeout: m.cfg.Timeout,
		got: map[NodeID]map[string]entry{}, answered: map[NodeID]bool{}, failed: map[NodeID]bool{}, refilling: map[NodeID]bool{}}
	fenced := false
	for i, c := range calls {
		for _, p := range c.q.members(m.self) {
			r.dest[p] = append(r.dest[p], i)
		}
		if c.fence != 0 {
			fenced = true
		}
	}
	switch {
	case calls[0].scan:
		r.op = "scan"
	case fenced:
		r.op = "fenced read"
	}
	r.asked = destinations(r.dest, m.self)
	r.seq = m.rounds.start()
	if windowed {
		m.readRounds++
	}
	r.req = m.request(r)
	r.fenced = fenced
	for _, p := range r.asked {
		r.ask(m, p)
	}
}

// ask sends replica p its part of the round (again, after it answered that it refills).
func (r *readRound) ask(m *Machine, p NodeID) {
	calls, idx := r.calls, r.dest[p]
	if calls[0].scan {
		if p == m.self {
			m.diskOp(DiskOp{Kind: DiskScan, prefix: calls[0].key}, r.localAnswer(m))
		} else {
			read := &pb.ReplicaRead{Scan: true, Prefix: []byte(calls[0].key)}
			m.send(p, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Read{Read: read}})
		}
		return
	}
	keys := make([]string, len(idx))
	var fences []uint64
	if r.fenced {
		fences = make([]uint64, len(idx))
	}
	for j, i := range idx {
		keys[j] = calls[i].key
		if r.fenced {
			fences[j] = calls[i].fence
		}
	}
	switch {
	case p != m.self:
		read := &pb.ReplicaRead{Keys: keyBytes(keys), Fences: fences}
		m.send(p, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Read{Read: read}})
	case r.fenced:
		m.apply(applyOp{kind: opFence, keys: keys, fences: fences}, func(res DiskResult) {
			if res.err == nil {
				res.entries = res.applied[0].entries
			}
			r.localAnswer(m)(res)
		})
	default:
		m.diskOp(DiskOp{Kind: DiskRead, keys: keys}, r.localAnswer(m))
	}
}

// refillWait is how long a read waits before asking a refilling replica again: a replica
// that refills (it joined the metadata's replicas, lost its store) counts again within a few
// anti-entropy rounds, and a read that needs it waits rather than fails, up to its timeout.
const refillWait = 50 * time.Millisecond

// askAgain has the round ask p again after refillWait, if its deadline allows.
func (r *readRound) askAgain(m *Machine, p NodeID) bool {
	at := m.now.Add(refillWait)
	if !at.Before(r.until) {
		return false
	}
	m.reasks = append(m.reasks, reask{at: at, round: r, p: p})
	return true
}

// reask is a refilling replica to ask again.
type reask struct {
	at    time.Time
	round *readRound
	p     NodeID
}

// tickReasks asks again the refilling replicas that are due.
func (m *Machine) tickReasks() {
	keep := m.reasks[:0]
	var due []reask
	for _, a := range m.reasks {
		if m.now.Before(a.at) {
			keep = append(keep, a)
		} else {
			due = append(due, a)
		}
	}
	m.reasks = keep
	for _, a := range due {
		if !a.round.finished {
			a.round.got[a.p] = nil
			a.round.ask(m, a.p)
		}
	}
}

// localAnswer returns the handler of the local disk's answer: a failed one while this
// replica refills and does not count for the units read (machine_refill.go).
func (r *readRound) localAnswer(m *Machine) func(DiskResult) {
	return func(res DiskResult) {
		if res.err == nil && !r.calls[0].all {
			for _, i := range r.dest[m.self] {
				if !m.counts(r.calls[i].q.unit) {
					if r.refills(m, m.self) {
						return
					}
					res.err = fmt.Errorf("remember: %w", ErrRefilling)
					break
				}
			}
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

func (r *readRound) from(p NodeID) bool  { _, ok := r.dest[p]; return ok }
func (r *readRound) deadline() time.Time { return r.until }

func (r *readRound) answer(m *Machine, from NodeID, env *pb.ReplicaEnvelope) {
	msg, ok := env.Msg.(*pb.ReplicaEnvelope_Records)
	if !ok {
		return
	}
	var err error
	if msg.Records.Error != "" {
		if msg.Records.Refilling && r.refills(m, from) {
			return
		}
		err = fmt.Errorf("replica %s: %s", from, msg.Records.Error)
	}
	recs := fromPBs(msg.Records.Records, false)
	m.observe(recs)
	r.take(m, from, recs, msg.Records.Last || err != nil, err)
}

// refills takes the answer of replica p that it refills: p does not count; the round asks
// it again after refillWait, and meanwhile decides the calls whose sets may do without it.
// False when the round cannot wait for it any more (p's answer then fails).
func (r *readRound) refills(m *Machine, p NodeID) bool {
	if r.finished || r.answered[p] || !r.from(p) {
		return true // nothing to take
	}
	r.refilling[p] = true
	if !r.askAgain(m, p) {
		return false
	}
	r.decide(m, false)
	return true
}

// take takes a part of a replica's answer.
func (r *readRound) take(m *Machine, from NodeID, part []entry, last bool, err error) {
	if r.finished || r.answered[from] || !r.from(from) {
		return
	}
	got := r.got[from]
	if got == nil {
		got = make(map[string]entry, len(part))
		r.got[from] = got
	}
	for _, e := range part {
		got[e.rec.Key] = e
	}
	if !last {
		return
	}
	r.answered[from] = true
	if err != nil {
		r.failed[from] = true
		delete(r.got, from)
		if r.cause == nil {
			r.cause = err
		}
	}
	r.decide(m, false)
}

// decide answers the calls whose outcome is known (every one when expired) and ends the
// round when none is left.
func (r *readRound) decide(m *Machine, expired bool) {
	ok := func(p NodeID) bool { return r.answered[p] && !r.failed[p] }
	open := func(p NodeID) bool { return !expired && !r.answered[p] }
	refilling := func(p NodeID) bool { return r.refilling[p] }
	for _, c := range r.calls {
		if c.done {
			continue
		}
		var v verdict
		if c.all {
			v = pending
			if len(r.answered) == len(r.asked) || expired {
				v = succeeded
			}
		} else {
			v = c.q.decideReading(ok, open, refilling)
		}
		if v == pending {
			continue
		}
		c.done = true
		r.left--
		if v == failedNow || (v == pending && expired) {
			m.answerCall(Answer{Call: c.id, Err: r.failure(c, ok, expired)})
			continue
		}
		r.answerCall(m, c, ok)
	}
	if r.left == 0 {
		r.finish(m)
	}
}

// answerCall answers c from the replicas of its quorum that answered, and repairs those
// that lag.
func (r *readRound) answerCall(m *Machine, c *readCall, ok func(NodeID) bool) {
	if !c.scan {
		r.answerGet(m, c, ok)
		return
	}
	from := make(map[NodeID][]entry)
	var missing []NodeID
	for _, p := range c.q.members(m.self) {
		if !ok(p) {
			if !r.answered[p] {
				missing = append(missing, p)
			}
			continue
		}
		got := r.got[p]
		if c.scan {
			es := make([]entry, 0, len(got))
			for _, e := range got {
				es = append(es, e)
			}
			from[p] = es
		} else if e, found := got[c.key]; found {
			from[p] = []entry{e}
		} else {
			from[p] = nil
		}
	}
	merged, repairs := mergeAnswers(from)
	if !c.all {
		m.repair(repairs)
	}
	a := Answer{Call: c.id, Missing: missing}
	for _, e := range merged {
		if !e.rec.Version.IsZero() && !e.rec.Deleted {
			a.Records = append(a.Records, e.rec)
		}
	}
	sort.Slice(a.Records, func(i, j int) bool { return a.Records[i].Key < a.Records[j].Key })
	m.answerCall(a)
}

// answerGet answers a one-key call as answerCall does a scan — the answers merged by the
// merge rule, the replicas that lag repaired — without the maps a scan's merge takes: it is
// every entity start's read.
func (r *readRound) answerGet(m *Machine, c *readCall, ok func(NodeID) bool) {
	members := c.q.members(m.self)
	merged, found := entry{rec: Record{Key: c.key}}, false
	for _, p := range members {
		if e, has := r.got[p][c.key]; has && ok(p) {
			merged, found = merge(merged, e), true
		}
	}
	if found && !c.all {
		var repairs map[NodeID][]entry
		for _, p := range members {
			if !ok(p) {
				continue
			}
			mine := r.got[p][c.key] // absent: the zero entry
			if !sameState(&mine, &merged) {
				if repairs == nil {
					repairs = make(map[NodeID][]entry)
				}
				repairs[p] = []entry{merged}
			}
		}
		m.repair(repairs)
	}
	m.answerCall(Answer{Call: c.id, Record: merged.rec, Found: !merged.rec.Version.IsZero() && !merged.rec.Deleted})
}

// failure is the error of call c that cannot reach its quorum; expired: the round waited
// its whole timeout for the members that did not answer.
func (r *readRound) failure(c *readCall, ok func(NodeID) bool, expired bool) error {
	e := &QuorumError{Op: r.op, Key: c.key, Cause: r.cause, Unit: c.q.unit.String()}
	if expired {
		e.Timeout = r.timeout
	}
	e.Got, e.Need, e.N = c.q.shortfallReading(ok, func(p NodeID) bool { return r.refilling[p] })
	for _, p := range c.q.members("") {
		switch {
		case ok(p):
		case r.refilling[p]:
			e.Refilling = append(e.Refilling, p)
		case !r.answered[p]:
			e.Missing = append(e.Missing, p)
		case r.failed[p]:
			e.Failed = append(e.Failed, p)
		}
	}
	return e
}

func (r *readRound) expire(m *Machine) {
	if !r.finished {
		r.decide(m, true)
	}
}

// finish ends the round.
func (r *readRound) finish(m *Machine) {
	if r.finished {
		return
	}
	r.finished = true
	r.got = nil
	delete(m.pending, r.req)
	m.rounds.end(r.seq)
	m.roundEnded()
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

// serveRead answers a peer's read, scan or page of a scan. A fenced read goes through the
// disk's applies (raising the floors first, in order with writes); others wait for one of
// maxServing places.
func (m *Machine) serveRead(from NodeID, req uint64, msg *pb.ReplicaRead) {
	keys := make([]string, len(msg.Keys))
	for i, k := range msg.Keys {
		keys[i] = string(k)
	}
	counts := m.countsKeys(keys, msg)
	if len(msg.Fences) > 0 {
		m.apply(applyOp{kind: opFence, keys: keys, fences: msg.Fences}, func(res DiskResult) {
			if res.err == nil {
				res.entries = res.applied[0].entries
			}
			m.answerRead(from, req, res, counts)
		})
		return
	}
	if !counts {
		m.answerRead(from, req, DiskResult{}, false)
		return
	}
	op := DiskOp{Kind: DiskRead, keys: keys}
	if msg.Scan {
		op = DiskOp{Kind: DiskScan, prefix: string(msg.Prefix), after: string(msg.After), limit: int(msg.Limit)}
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
			m.answerRead(sr.from, sr.req, res, true)
			m.serveNext()
		})
	}
}

// answerRead sends a peer the entries it read that are not absent, in parts; an error when
// this replica does not count for what was read (it refills; a fenced read has raised its
// floors all the same).
func (m *Machine) answerRead(to NodeID, req uint64, res DiskResult, counts bool) {
	if !counts && res.err == nil {
		res.err = fmt.Errorf("remember: %w", ErrRefilling)
	}
	if res.err != nil {
		m.sendFrame(to, recordsFrame(req, nil, true, false, res.err))
		return
	}
	out := res.entries[:0:0]
	for i := range res.entries {
		if !res.entries[i].absent() {
			out = append(out, res.entries[i])
		}
	}
	parts(out, func(part []entry, last bool) { m.sendFrame(to, recordsFrame(req, part, last, last && res.more, nil)) })
}
