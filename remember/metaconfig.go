package remember

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
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
// Each replica knows the configuration from its own disk: the record is applied (and
// fsynced) like any other before the machine takes it from the disk's result, and it is
// read back at open (DiskState). After a restart, a member routes metadata calls to a
// majority of the last configuration it knew and first reads the configuration from it,
// again from each newer one found, until none is newer: every configuration was stored
// on a majority of the one before, so the chain leads to the last one. Metadata calls wait
// until then (a read that fails fails them with ErrMetaUnknown). A cluster that restarts without a majority of the last
// metadata set therefore reads no metadata — it never reads it from a stale minority.

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
}

// joint reports whether the metadata moves to Next.
func (c *MetaConfig) joint() bool { return len(c.Next) > 0 }

// quorum returns what a metadata call under c needs.
func (c *MetaConfig) quorum() quorum {
	q := single(Unit{}, c.Set)
	if c.joint() {
		q.sets = append(q.sets, c.Next)
	}
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

// learnMeta takes configuration c, found on the disk or read: the newest generation wins.
func (m *Machine) learnMeta(c MetaConfig) {
	if c.Gen <= m.meta.cfg.Gen {
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
	m.readWith(m.metaQuorum(), m.metaKey(), func(a Answer) {
		m.meta.learning = false
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
		before := m.meta.cfg.Gen
		if a.Found {
			if c, ok := decodeMetaConfig(&entry{rec: a.Record}); ok {
				m.learnMeta(c)
			}
		}
		if m.meta.cfg.Gen != before {
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

// stepMeta takes the next step of the change this member drives.
func (m *Machine) stepMeta() {
	target := m.metaTarget()
	if target == nil {
		return
	}
	c := m.meta.cfg
	var next MetaConfig
	var q quorum
	probe := false
	switch {
	case c.Gen == 0: // the first configuration: the voters, where the metadata is now (before
		// one is stored, metadata calls use the voters of the moment)
		next, q = MetaConfig{Gen: 1, Set: target}, single(Unit{}, target)
	case !c.joint():
		next = MetaConfig{Gen: c.Gen + 1, Set: c.Set, Next: target}
		q = next.quorum()
	default: // joint: once a majority of Next counts in reads, Next alone
		next, q, probe = MetaConfig{Gen: c.Gen + 1, Set: c.Next}, c.quorum(), true
	}
	m.meta.changing = true
	fail := func() {
		m.meta.changing = false
		m.meta.nextStep = m.now.Add(metaLearnRetry)
	}
	write := func() {
		m.writeWith(q, Write{Key: m.metaKey(), Value: next.encode()}, func(err error) {
			if err != nil {
				fail()
				return
			}
			m.meta.changing = false
			m.learnMeta(next)
		})
	}
	if !probe {
		write()
		return
	}
	m.readWith(q, m.metaKey(), func(a Answer) {
		if a.Err != nil || m.meta.cfg.Gen != c.Gen {
			fail()
			return
		}
		write()
	})
}

// readWith reads key under quorum q (the machine's own call).
func (m *Machine) readWith(q quorum, key string, done func(Answer)) {
	m.nextCall++
	c := &readCall{id: m.nextCall, key: key, q: q}
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
