package remember

import (
	"fmt"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// Anti-entropy of shard units, run by their hosts. Every AntiEntropyInterval (±25%) a host
// asks the other replicas of up to maxSyncUnits of its units (in turn) for their digests of
// them, in one request per replica. A unit no write round touched meanwhile is then
// compared:
//
//   - every replica answered with the same digest: the replicas agree, so the tombstones
//     they hold are on every one of them, and the host has them collected (each replica
//     drops the unit's tombstones if its digest is still the one compared: the same
//     tombstones on every replica, so none comes back by anti-entropy);
//   - digests differ, or a replica refills: the host syncs the unit (unitSync): it reads
//     the unit page by page from every replica that answers, merges, and writes back to
//     each what it lacks; a refilling replica that got everything from enough others
//     counts in the unit's reads again (machine_refill.go).
//
// A unit's traffic is its host's: per member it does not grow with the cluster.

// maxSyncUnits bounds the units one comparison asks about.
const maxSyncUnits = 256

// maxUnitSyncs bounds the units synced at once.
const maxUnitSyncs = 2

// unitSync is the state of this member's anti-entropy of the units it hosts.
type unitSync struct {
	next    time.Time
	turn    int
	round   *digestRound
	queue   []Unit
	syncing int
}

// wake returns when the unit anti-entropy next needs a Tick.
func (s *unitSync) wake() time.Time {
	if s.round != nil {
		return s.round.until
	}
	return s.next
}

// tickUnits retries failed moves and starts a comparison of the hosted units when due.
func (m *Machine) tickUnits() {
	m.retryMoves()
	m.tickCare()
	if m.cfg.AntiEntropyInterval <= 0 || m.us.round != nil || m.now.Before(m.us.next) {
		return
	}
	m.us.next = m.now.Add(m.aeJitter())
	hosted := m.hostedUnits()
	if len(hosted) == 0 {
		return
	}
	var units []Unit
	for i := 0; i < len(hosted) && len(units) < maxSyncUnits; i++ {
		u := hosted[(m.us.turn+i)%len(hosted)]
		if us := m.units[u]; us.cfg != nil && us.move == nil && !us.cfg.moving() && us.writes == 0 {
			units = append(units, u)
		}
	}
	m.us.turn += maxSyncUnits
	if len(units) > 0 {
		m.compareUnits(units)
	}
}

// digestRound is a comparison of some units' digests across their replicas.
type digestRound struct {
	req      uint64
	units    []Unit
	gens     []uint64 // each unit's writeGen when asked
	asked    []NodeID
	got      map[NodeID]map[Unit]*pb.ReplicaUnitDigest
	answered map[NodeID]bool
	until    time.Time
}

// compareUnits asks the other replicas of units for their digests.
func (m *Machine) compareUnits(units []Unit) {
	r := &digestRound{units: units, got: map[NodeID]map[Unit]*pb.ReplicaUnitDigest{}, answered: map[NodeID]bool{}, until: m.now.Add(m.cfg.Timeout)}
	ask := map[NodeID][]*pb.ReplicaUnit{}
	for _, u := range units {
		us := m.units[u]
		r.gens = append(r.gens, us.writeGen)
		for _, p := range us.cfg.Set {
			if p != m.self {
				ask[p] = append(ask[p], unitPB(u))
			}
		}
	}
	r.asked = destinations(ask, m.self)
	m.us.round = r
	if len(r.asked) == 0 {
		m.compared(r)
		return
	}
	r.req = m.request(r)
	for _, p := range r.asked {
		m.send(p, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_UnitDigest{UnitDigest: &pb.ReplicaUnits{Units: ask[p]}}})
	}
}

func (r *digestRound) from(p NodeID) bool  { return slices.Contains(r.asked, p) }
func (r *digestRound) deadline() time.Time { return r.until }

func (r *digestRound) answer(m *Machine, from NodeID, env *pb.ReplicaEnvelope) {
	msg, ok := env.Msg.(*pb.ReplicaEnvelope_UnitDigests)
	if !ok || r.answered[from] {
		return
	}
	r.answered[from] = true
	got := map[Unit]*pb.ReplicaUnitDigest{}
	for _, d := range msg.UnitDigests.Digests {
		got[unitOf(d.Unit)] = d
	}
	r.got[from] = got
	if len(r.answered) == len(r.asked) {
		delete(m.pending, r.req)
		m.compared(r)
	}
}

func (r *digestRound) expire(m *Machine) {
	delete(m.pending, r.req)
	m.compared(r)
}

// compared acts on the digests: tombstones collected where the replicas agree, units
// synced where they differ.
func (m *Machine) compared(r *digestRound) {
	if m.us.round != r {
		return
	}
	m.us.round = nil
	for i, u := range r.units {
		us := m.units[u]
		if us == nil || !us.hosted || us.cfg == nil || us.move != nil || us.cfg.moving() || us.writeGen != r.gens[i] || us.writes > 0 {
			continue // written or moved meanwhile: compared next time
		}
		mine := m.hold.unit(u)
		var hash uint64
		first, all, same, refilling := true, true, true, false
		check := func(h uint64) {
			if first {
				hash, first = h, false
			} else if h != hash {
				same = false
			}
		}
		for _, p := range us.cfg.Set {
			if p == m.self {
				check(mine.hash)
				refilling = refilling || !m.counts(u)
				continue
			}
			d := r.got[p][u]
			if d == nil {
				all = false
				continue
			}
			check(d.Hash)
			refilling = refilling || d.Refilling
		}
		switch {
		case !same || refilling:
			m.queueUnitSync(u)
		case all && tombstonesIn(u, us.cfg.Set, m, r) > 0:
			m.collect(u, us.cfg.Set, hash)
		}
	}
}

// tombstonesIn returns how many tombstones the replicas of u hold (they agree).
func tombstonesIn(u Unit, set []NodeID, m *Machine, r *digestRound) int {
	for _, p := range set {
		if p == m.self {
			return m.hold.unit(u).tombstones
		}
		if d := r.got[p][u]; d != nil {
			return int(d.Tombstones)
		}
	}
	return 0
}

// collect has every replica of u in set collect its tombstones if it still holds hash.
func (m *Machine) collect(u Unit, set []NodeID, hash uint64) {
	for _, p := range set {
		if p == m.self {
			m.serveCollect(u, hash)
			continue
		}
		m.send(p, &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_Collect{Collect: &pb.ReplicaCollect{Unit: unitPB(u), Hash: hash}}})
	}
}

// serveCollect drops the tombstones of u if this replica's digest of it is still hash
// (then every replica holds them).
func (m *Machine) serveCollect(u Unit, hash uint64) {
	if d := m.hold.unit(u); d.hash != hash || d.tombstones == 0 {
		return
	}
	m.scanUnit(u, func(es []entry, err error) {
		if err != nil || m.hold.unit(u).hash != hash {
			return
		}
		var dead []entry
		for _, e := range es {
			if e.rec.Deleted {
				dead = append(dead, e)
			}
		}
		if len(dead) == 0 {
			return
		}
		m.apply(applyOp{kind: opDiscard, recs: dead}, func(res DiskResult) {
			if res.err == nil {
				m.stats.Collected += uint64(res.applied[0].changed)
			}
		})
	})
}

// serveUnitDigests answers a host's request for this replica's digests of some units.
func (m *Machine) serveUnitDigests(from NodeID, req uint64, units []*pb.ReplicaUnit) {
	out := &pb.ReplicaUnitDigests{}
	for _, pu := range units {
		u := unitOf(pu)
		d := m.hold.unit(u)
		out.Digests = append(out.Digests, &pb.ReplicaUnitDigest{Unit: pu, Hash: d.hash, Count: uint64(d.count),
			Tombstones: uint64(d.tombstones), Refilling: !m.counts(u)})
	}
	m.send(from, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_UnitDigests{UnitDigests: out}})
}

// queueUnitSync queues a sync of hosted unit u.
func (m *Machine) queueUnitSync(u Unit) {
	if slices.Contains(m.us.queue, u) {
		return
	}
	m.us.queue = append(m.us.queue, u)
	m.startUnitSyncs()
}

func (m *Machine) startUnitSyncs() {
	for m.us.syncing < maxUnitSyncs && len(m.us.queue) > 0 {
		u := m.us.queue[0]
		m.us.queue = m.us.queue[1:]
		us := m.units[u]
		if us == nil || !us.hosted || us.cfg == nil || us.move != nil || us.cfg.moving() {
			continue
		}
		m.us.syncing++
		m.stats.UnitSyncs++
		s := &unitSyncRun{u: u, us: us, set: slices.Clone(us.cfg.Set), unread: map[NodeID]bool{}, unpushed: map[NodeID]bool{}}
		m.syncPage(s)
	}
}

// unitSyncRun is a sync of one unit: page by page, read from every replica, merged, and
// written back to each what it lacks.
type unitSyncRun struct {
	u        Unit
	us       *unitState // the host's state of u (nil for a refill's own sync)
	refill   bool       // a refilling replica's sync of a unit that names it (machine_refill.go)
	set      []NodeID
	prefix   int
	after    string
	unread   map[NodeID]bool // replicas a page could not be read from (no answer, refilling)
	unpushed map[NodeID]bool // replicas a write-back did not reach
}

// syncPage syncs the next page of s.
func (m *Machine) syncPage(s *unitSyncRun) {
	prefixes := m.layout.Prefixes(s.u)
	if s.prefix >= len(prefixes) || !s.refill && (m.units[s.u] != s.us || !s.us.hosted) {
		m.endUnitSync(s)
		return
	}
	// Every replica is asked; the page needs the majority any read needs.
	r := &pageRound{q: single(s.u, s.set), asked: s.set, prefix: prefixes[s.prefix], until: m.now.Add(m.cfg.Timeout),
		got: map[NodeID][]entry{}, more: map[NodeID]bool{}, answered: map[NodeID]bool{}, failed: map[NodeID]bool{}}
	r.done = func(_ []entry, _ string, _ bool, err error) {
		if err != nil {
			m.us.syncing--
			if s.refill {
				delete(m.rf.syncing, s.u) // again at the refill's next scan
			}
			m.startUnitSyncs()
			return
		}
		m.syncMerged(s, r)
	}
	r.seq = m.rounds.start()
	r.req = m.request(r)
	for _, p := range s.set {
		if p == m.self {
			m.diskOp(DiskOp{Kind: DiskScan, prefix: r.prefix, after: s.after, limit: copyPageSize}, func(res DiskResult) {
				if res.err == nil && !m.counts(s.u) {
					res.err = fmt.Errorf("remember: %w", ErrRefilling)
				}
				r.take(m, m.self, res.entries, true, res.more, res.err)
			})
			continue
		}
		m.send(p, &pb.ReplicaEnvelope{RequestId: r.req, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{
			Scan: true, Prefix: []byte(r.prefix), After: []byte(s.after), Limit: copyPageSize}}})
	}
}

// syncMerged writes back to each replica of s what it lacks of the merged page r read.
// The pages of replicas that did not answer (or refill) count as empty: they get everything.
func (m *Machine) syncMerged(s *unitSyncRun, r *pageRound) {
	es, next, more := mergePages(r.got, r.more)
	left := 1
	step := func() {
		if left--; left > 0 {
			return
		}
		if more {
			s.after = next
		} else {
			s.prefix, s.after = s.prefix+1, ""
		}
		m.syncPage(s)
	}
	for _, p := range s.set {
		if !r.answered[p] || r.failed[p] {
			s.unread[p] = true
		}
		have := make(map[string]*entry, len(r.got[p]))
		for i := range r.got[p] {
			have[r.got[p][i].rec.Key] = &r.got[p][i]
		}
		var lacks []entry
		for i := range es {
			if h := have[es[i].rec.Key]; h == nil || !sameState(h, &es[i]) {
				lacks = append(lacks, es[i])
			}
		}
		if len(lacks) == 0 {
			continue
		}
		left++
		m.copyTo(&unitMove{u: s.u}, single(s.u, []NodeID{p}), lacks, func(err error) {
			switch {
			case err != nil:
				s.unpushed[p] = true
			case p == m.self:
				m.noteLanded(lacks, nil) // what this replica lacked, now on its disk
			}
			step()
		})
	}
	step()
}

// endUnitSync ends a sync: replicas that refill and got everything count again for the
// unit, when enough others were read (as a refill needs, machine_refill.go).
func (m *Machine) endUnitSync(s *unitSyncRun) {
	m.us.syncing--
	if s.refill {
		delete(m.rf.syncing, s.u)
	}
	if s.refill || m.units[s.u] == s.us {
		n := len(s.set)
		if n-len(s.unread) >= n-majority(n)+1 {
			for _, p := range s.set {
				switch {
				case s.unpushed[p]:
				case p == m.self:
					m.unitSynced(s.u)
				default:
					m.send(p, &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_Synced{Synced: unitPB(s.u)}})
				}
			}
		}
	}
	m.startUnitSyncs()
}

// aeJitter returns an anti-entropy interval ±25 %, so members' rounds do not align.
func (m *Machine) aeJitter() time.Duration {
	iv := m.cfg.AntiEntropyInterval
	if iv <= 0 {
		return 0
	}
	return iv*3/4 + time.Duration(m.rng.Int64N(int64(iv/2)+1))
}
