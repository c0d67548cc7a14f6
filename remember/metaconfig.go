package remember

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// The metadata's stored configuration. The cluster metadata (coordinator terms, directives,
// pins, placement history, leases, the units' configurations) lives on the voters
// (Placement.Meta), but which members hold it is not recomputed from the membership: it is
// a record of the metadata itself, MetaConfig under Layout.ConfigKey(Unit{}), with a
// generation, and it changes only as Raft changes its configuration (etcd's ConfChangeV2,
// CockroachDB's learner → joint → final replica changes):
//
//  1. the driver (the oldest voter present) stores {Gen+1, Set, Next}: from then on every
//     metadata read and write needs a majority of Set and of Next (joint quorums); the
//     write itself is taken by a majority of each;
//  2. each member of Next not in Set refills from Set's members (machine_refill.go) and
//     answers no read until it holds what they hold; the driver reads the configuration
//     under the joint quorum until a majority of Next answers that counts;
//  3. it stores {Gen+2, Next} under the joint quorum.
//
// Two members may each take themselves for the driver (a partition, a stale membership
// view), so every step is a round of single-decree Paxos over the record, with the store's
// fencing as its promises: the driver takes a ballot above every one it has seen, unique
// to it (newBallot); it reads the record fenced by the ballot from a quorum of the
// configuration it knows (phase 1: from then on those replicas refuse every write of the
// record with a lower ballot, applyWrite); a newer configuration found is learned and the
// step starts over; otherwise it stores the configuration it knows again with its ballot
// (phase 2 for the value it found, so that what it builds on is chosen), then the next one
// with the same ballot. A write refused (FencedError) tells the driver the ballot to beat.
// Configurations are ordered by ballot, then generation (newerMeta), as the records are by
// version: every replica holds, and acts on, the one its disk holds.
//
// Each replica knows the configuration from its own disk: the record is applied (and
// fsynced) like any other before the machine takes it from the disk's result, and it is
// read back at open (DiskState). After a restart, a member routes metadata calls to a
// majority of the last configuration it knew and first reads the configuration from it,
// again from each newer one found, until none is newer: every configuration was stored
// on a majority of the one before, so the chain leads to the last one. Metadata calls wait
// until then (a read that fails fails them with ErrMetaUnknown). A cluster that restarts
// without a majority of the last metadata set therefore reads no metadata — it never reads
// it from a stale minority.

// ErrMetaUnknown says the member could not yet read which members hold the metadata since
// it started (metadata calls wait for the first read, and fail with its error); callers
// retry.
var ErrMetaUnknown = errors.New("the metadata's replica set is not known yet: this member reads it from the last set it knew")

// metaLearnRetry is the pause before a failed read of the metadata's configuration, or a
// step of its change, is tried again.
const metaLearnRetry = time.Second

// MetaConfig is the metadata's replica configuration.
type MetaConfig struct {
	// Gen orders the configurations: each change stores Gen+1 (joint), then Gen+2.
	Gen uint64 `json:"gen"`
	// Set holds the metadata: every write acknowledged under it is on a majority of it.
	Set []NodeID `json:"set"`
	// Next, during a change, is the set the metadata moves to (joint quorums).
	Next []NodeID `json:"next,omitempty"`
	// Ballot is the driver's ballot that stored it (the record's epoch): replicas refuse
	// the writes of lower ballots once a higher one has read the record fenced.
	Ballot uint64 `json:"ballot,omitempty"`
}

// newerMeta reports whether configuration c supersedes d: the higher ballot, then the
// higher generation (configurations stored before ballots have ballot 0).
func newerMeta(c, d MetaConfig) bool {
	return c.Ballot > d.Ballot || c.Ballot == d.Ballot && c.Gen > d.Gen
}

// sameMeta reports whether c and d name the same members in the same roles at the same
// generation (ballots aside).
func sameMeta(c, d MetaConfig) bool {
	return c.Gen == d.Gen && equalSets(c.Set, d.Set) && equalSets(c.Next, d.Next)
}

// ballotBits is the width of the driver's part of a ballot: a ballot is a round (the high
// bits) and a hash of the driver's id (the low ones), so two drivers never take the same
// ballot (Paxos's (round, proposer) pairs) unless their ids' 32-bit hashes collide.
const ballotBits = 32

// newBallot returns a ballot above every ballot this member has seen, its own.
func (m *Machine) newBallot() uint64 {
	round := max(m.meta.seen, m.meta.cfg.Ballot)>>ballotBits + 1
	return round<<ballotBits | xxhash.Sum64String(string(m.self))&(1<<ballotBits-1)
}

// joint reports whether the metadata moves to Next.
func (c *MetaConfig) joint() bool { return len(c.Next) > 0 }

// quorum returns what a metadata call under c needs.
func (c *MetaConfig) quorum() quorum {
	q := single(Unit{}, c.Set)
	if c.joint() {
		q.sets = append(q.sets, c.Next)
	}
	q.by = MetaConfig{Gen: c.Gen, Ballot: c.Ballot}
	return q
}

// members returns Set and Next, each member once.
func (c *MetaConfig) members() []NodeID {
	out := slices.Clone(c.Set)
	for _, p := range c.Next {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (c *MetaConfig) encode() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("remember: encode metadata config: %v", err))
	}
	return b
}

// decodeMetaConfig reads a stored MetaConfig; ok is false for a tombstone or a record that
// is not one.
func decodeMetaConfig(e *entry) (MetaConfig, bool) {
	var c MetaConfig
	if e.absent() || e.rec.Deleted || json.Unmarshal(e.rec.Value, &c) != nil || c.Gen == 0 || len(c.Set) == 0 {
		return MetaConfig{}, false
	}
	return c, true
}

// metaState is the machine's knowledge of the metadata's configuration.
type metaState struct {
	cfg       MetaConfig // the newest known; Gen 0: none stored (a new cluster)
	known     bool       // read from the last set known since the start (metadata calls wait until then)
	learning  bool       // a read of the configuration is in flight
	nextLearn time.Time  // when it is read again
	changing  bool       // this member drives a change, a step in flight
	seen      uint64     // the highest ballot seen (records read, writes refused)
	nextStep  time.Time  // when the driver next tries a step
	waiting   []metaWait // metadata calls made before it was known
	firstSet  []NodeID   // the voters of the first placement: no configuration is stored while they hold the metadata
}

// MetaConfig returns the metadata's configuration as this member knows it, and whether it
// has read it since it started.
func (m *Machine) MetaConfig() (MetaConfig, bool) { return m.meta.cfg, m.meta.known }

// metaKey is the key of the metadata's configuration.
func (m *Machine) metaKey() string { return m.layout.ConfigKey(Unit{}) }

// metaQuorum is what a metadata call needs now: the stored configuration's, or, before any
// was stored (a new cluster), a majority of the voters.
func (m *Machine) metaQuorum() quorum {
	if m.meta.cfg.Gen == 0 {
		return single(Unit{}, m.placedMeta())
	}
	return m.meta.cfg.quorum()
}

// placedMeta returns the voters (Placement.Meta), this member alone without a placement.
func (m *Machine) placedMeta() []NodeID {
	if m.place == nil || len(m.place.Meta()) == 0 {
		return []NodeID{m.self}
	}
	return m.place.Meta()
}

// learnMeta takes configuration c, found on the disk or read: the newest (newerMeta) wins.
func (m *Machine) learnMeta(c MetaConfig) {
	m.meta.seen = max(m.meta.seen, c.Ballot)
	if !newerMeta(c, m.meta.cfg) {
		return
	}
	prev := m.meta.cfg
	m.meta.cfg = c
	// A member that joins the set refills from the old one before its answers count.
	if m.cfg.AntiEntropyInterval > 0 && c.joint() && slices.Contains(c.Next, m.self) && !slices.Contains(c.Set, m.self) &&
		!slices.Contains(prev.members(), m.self) && !m.rf.active {
		m.startMetaRefill(m.now, reasonEnteredMeta)
	}
}

// tickMeta reads the configuration when due (at the start, then every anti-entropy
// interval), and drives its change when this member is the oldest voter present.
func (m *Machine) tickMeta() {
	if m.place == nil {
		return
	}
	if m.learnDue() {
		m.readMeta()
	}
	if m.meta.known && !m.meta.changing && !m.now.Before(m.meta.nextStep) {
		m.stepMeta()
	}
}

// metaWake returns when tickMeta has something to do (zero: nothing).
func (m *Machine) metaWake() time.Time {
	if m.place == nil {
		return time.Time{}
	}
	next := time.Time{}
	if !m.meta.learning && (!m.meta.known || m.cfg.AntiEntropyInterval > 0) {
		next = m.meta.nextLearn
	}
	if m.meta.known && !m.meta.changing && m.metaTarget() != nil && (next.IsZero() || m.meta.nextStep.Before(next)) {
		next = m.meta.nextStep
	}
	return next
}

// learnDue reports whether the configuration is to be read now: at the start when the disk
// held one, then every anti-entropy interval (never without anti-entropy).
func (m *Machine) learnDue() bool {
	return !m.meta.learning && !m.now.Before(m.meta.nextLearn) && (!m.meta.known || m.cfg.AntiEntropyInterval > 0)
}

// readMeta reads the configuration from the quorum of the one known; a newer one found is
// read from again.
func (m *Machine) readMeta() {
	m.meta.learning = true
	before := m.meta.cfg
	m.readWith(m.metaQuorum(), m.metaKey(), func(a Answer) {
		m.meta.learning = false
		if a.Err != nil && newerMeta(m.meta.cfg, before) {
			m.meta.nextLearn = m.now // a replica answered with a newer one: read from it at once
			return
		}
		if a.Err != nil {
			m.meta.nextLearn = m.now.Add(metaLearnRetry)
			if !m.meta.known {
				m.releaseMeta(fmt.Errorf("%w: %w", ErrMetaUnknown, a.Err))
				if len(m.meta.waiting) > 0 {
					m.meta.nextLearn = m.now // calls wait: read again at once
				}
			}
			return
		}
		if a.Found {
			if c, ok := decodeMetaConfig(&entry{rec: a.Record}); ok {
				m.learnMeta(c)
			}
		}
		if newerMeta(m.meta.cfg, before) {
			m.meta.nextLearn = m.now // a newer one: read from it at once
			return
		}
		if !m.meta.known {
			m.meta.known = true
			m.releaseMeta(nil)
		}
		m.meta.nextLearn = m.now.Add(m.cfg.AntiEntropyInterval)
	})
}

// metaWait is a metadata call waiting for the configuration.
type metaWait struct {
	since time.Time
	fn    func(quorum, error)
}

// releaseMeta lets the metadata calls that waited for the configuration go on, or fails
// them with err.
func (m *Machine) releaseMeta(err error) {
	waiting := m.meta.waiting
	m.meta.waiting = nil
	for _, w := range waiting {
		switch {
		case err == nil:
			w.fn(m.metaQuorum(), nil)
		case m.now.Sub(w.since) >= m.cfg.Timeout: // waited a whole round: fail, callers retry
			w.fn(quorum{}, err)
		default: // came while the read was under way: waits for the next
			m.meta.waiting = append(m.meta.waiting, w)
		}
	}
}

// metaTarget returns the set the metadata should move to, when this member drives the
// change: the voters present, the oldest first (nil when there is nothing to do here).
func (m *Machine) metaTarget() []NodeID {
	var target []NodeID
	for _, id := range m.place.Meta() {
		if m.place.Present(id) {
			target = append(target, id)
		}
	}
	if len(target) == 0 || target[0] != m.self {
		return nil
	}
	c := &m.meta.cfg
	if c.Gen == 0 && equalSets(m.meta.firstSet, target) {
		return nil // a fixed set (tools, tests): nothing to store until it changes
	}
	if c.Gen > 0 && !c.joint() && equalSets(c.Set, target) {
		return nil
	}
	return target
}

// stepMeta takes the next step of the change this member drives: with a new ballot, it
// reads the configuration fenced from a quorum of the one it knows (for a joint one, until
// a majority of Next counts), stores the one it knows again with the ballot, then the next.
func (m *Machine) stepMeta() {
	target := m.metaTarget()
	if target == nil {
		return
	}
	c := m.meta.cfg
	b := m.newBallot()
	var next MetaConfig
	var q quorum
	switch {
	case c.Gen == 0 && len(m.meta.firstSet) > 0 && !equalSets(m.meta.firstSet, target):
		// the first configuration, when the voters changed since the first placement: from
		// those (where the metadata was), jointly
		next = MetaConfig{Gen: 1, Set: m.meta.firstSet, Next: target}
		q = next.quorum()
	case c.Gen == 0: // the first configuration: the voters, where the metadata is now (before
		// one is stored, metadata calls use the voters of the moment)
		next, q = MetaConfig{Gen: 1, Set: target}, single(Unit{}, target)
	case !c.joint():
		next = MetaConfig{Gen: c.Gen + 1, Set: c.Set, Next: target}
		q = next.quorum()
	default: // joint: once a majority of Next counts in reads, Next alone
		next, q = MetaConfig{Gen: c.Gen + 1, Set: c.Next}, c.quorum()
	}
	next.Ballot = b
	known := q
	if c.Gen > 0 {
		known = c.quorum()
	}
	m.meta.changing = true
	fail := func(err error) {
		if f, ok := errors.AsType[*FencedError](err); ok {
			m.meta.seen = max(m.meta.seen, f.Need)
		}
		m.meta.changing = false
		m.meta.nextStep = m.now.Add(metaLearnRetry)
	}
	store := func(cfg MetaConfig, q quorum, then func()) {
		m.writeWith(q, Write{Key: m.metaKey(), Value: cfg.encode(), Epoch: b}, func(err error) {
			if err != nil {
				fail(err)
				return
			}
			m.learnMeta(cfg)
			then()
		})
	}
	m.readFenced(known, m.metaKey(), b, func(a Answer) {
		if a.Err != nil {
			fail(a.Err)
			return
		}
		if a.Found {
			m.meta.seen = max(m.meta.seen, a.Record.Version.Epoch)
			if found, ok := decodeMetaConfig(&entry{rec: a.Record}); ok {
				m.learnMeta(found)
			}
		}
		if m.meta.cfg.Ballot != c.Ballot || m.meta.cfg.Gen != c.Gen {
			m.meta.changing = false // a newer one: the next step starts from it, at once
			return
		}
		done := func() {
			store(next, q, func() {
				m.meta.changing = false
				if m.cfg.OnMetaConfig != nil {
					m.cfg.OnMetaConfig(next)
				}
			})
		}
		if c.Gen == 0 {
			done()
			return
		}
		again := c
		again.Ballot = b
		if by := (MetaConfig{Gen: c.Gen, Ballot: b}); newerMeta(by, q.by) {
			q.by = by // routed by the configuration as stored again, which replicas then hold
		}
		store(again, known, done)
	})
}

// readWith reads key under quorum q (the machine's own call).
func (m *Machine) readWith(q quorum, key string, done func(Answer)) { m.readFenced(q, key, 0, done) }

// readFenced reads key under quorum q fenced by fence (0: not fenced; the machine's own call).
func (m *Machine) readFenced(q quorum, key string, fence uint64, done func(Answer)) {
	m.nextCall++
	c := &readCall{id: m.nextCall, key: key, q: q, fence: fence}
	m.own(c.id, done)
	if err := checkQuorum(q); err != nil {
		m.answerCall(Answer{Call: c.id, Err: err})
		return
	}
	m.readQueue = append(m.readQueue, c)
	m.startReads()
}

// writeWith stores w under quorum q (the machine's own call).
func (m *Machine) writeWith(q quorum, w Write, done func(error)) {
	m.nextCall++
	c := &writeCall{id: m.nextCall, writes: []Write{w}, unitOf: []int{0}, quorums: []quorum{q}}
	m.own(c.id, func(a Answer) { done(a.Err) })
	if err := checkQuorum(q); err != nil {
		m.answerCall(Answer{Call: c.id, Err: err})
		return
	}
	m.writeQueue = append(m.writeQueue, c)
	m.startWrites()
}

// ErrStaleMeta says a replica refused a metadata call routed by an older configuration of the
// metadata than the one it holds; it answered with that one, which the caller routes by
// from now on (callers retry).
var ErrStaleMeta = errors.New("the metadata's replica set changed since this member routed the call: retry")

// Calls are fenced by the configuration they were routed by, as CockroachDB's requests are
// by the range descriptor (RangeKeyMismatchError): each metadata read and write names the
// caller's configuration (generation and ballot), and a replica that holds a newer one
// refuses it and answers with its own. Every configuration was stored on a majority of each
// set of the one before and is known to a replica from the moment its disk holds it, so a
// call routed by an older one cannot reach a quorum once a newer one is acknowledged: a
// member that has not learned the change yet (it holds none of the metadata, it was cut
// off) reads and writes nothing from and to the old set alone. For writes the check is
// the disk's (applyOps), in order with the configuration's own write.

// metaFence is the configuration a write was routed by, for the disk to check.
type metaFence struct {
	key    string // the configuration's key
	by     MetaConfig
	isMeta []bool // per record of the write: a metadata record
}

// stale reports whether the configuration stored in after is newer than f's (nil: false).
func (f *metaFence) stale(after map[string]entry) bool {
	if f == nil {
		return false
	}
	e := after[f.key]
	c, ok := decodeMetaConfig(&e)
	return ok && newerMeta(c, f.by)
}

// fenceMeta returns the check of a write of recs routed by configuration (gen, ballot):
// nil when none of them is metadata.
func (m *Machine) fenceMeta(recs []entry, gen, ballot uint64) *metaFence {
	var f *metaFence
	for j := range recs {
		if !m.layout.UnitOf(recs[j].rec.Key).Meta() {
			continue
		}
		if f == nil {
			f = &metaFence{key: m.metaKey(), by: MetaConfig{Gen: gen, Ballot: ballot}, isMeta: make([]bool, len(recs))}
		}
		f.isMeta[j] = true
	}
	return f
}

// routedBy returns the configuration a round of calls with quorums qs is routed by: the
// oldest of their metadata quorums' (the zero one when none is metadata).
func routedBy(qs func(yield func(quorum) bool)) MetaConfig {
	var by MetaConfig
	first := true
	for q := range qs {
		if !q.unit.Meta() {
			continue
		}
		if first || newerMeta(by, q.by) {
			by, first = q.by, false
		}
	}
	return by
}

// routeRead names in read the configuration r's calls were routed by (a read of every
// member is not routed).
func (r *readRound) route(read *pb.ReplicaRead) {
	by := routedBy(func(yield func(quorum) bool) {
		for _, c := range r.calls {
			if !yield(c.q) {
				return
			}
		}
	})
	read.MetaGen, read.MetaBallot, read.MetaUnrouted = by.Gen, by.Ballot, r.calls[0].all
}

// staleRead reports whether a peer's routed read of keys (or of msg's scan) touches the
// metadata and was routed by an older configuration than this replica's.
func (m *Machine) staleRead(keys []string, msg *pb.ReplicaRead) bool {
	if msg.MetaUnrouted || !newerMeta(m.meta.cfg, MetaConfig{Gen: msg.MetaGen, Ballot: msg.MetaBallot}) {
		return false
	}
	if msg.Scan {
		u, ok := m.layout.UnitOfPrefix(string(msg.Prefix))
		return !ok || u.Meta()
	}
	return slices.ContainsFunc(keys, func(k string) bool { return m.layout.UnitOf(k).Meta() })
}

// staleFrame answers read req with ErrStaleMeta and configuration c.
func staleFrame(req uint64, c MetaConfig) []byte {
	return wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_Records{Records: &pb.ReplicaRecords{
		Last: true, Error: ErrStaleMeta.Error(), MetaConfig: c.encode()}}})
}

// learnMetaFrom takes a configuration a replica answered with.
func (m *Machine) learnMetaFrom(b []byte) {
	if c, ok := decodeMetaConfig(&entry{rec: Record{Value: b, Version: Version{Counter: 1}}}); ok {
		m.learnMeta(c)
	}
}
