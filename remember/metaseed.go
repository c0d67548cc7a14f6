package remember

import "github.com/shardmesh/shardmesh/wire/pb"

// A store whose metadata is on its disk but in no group — restored from a backup, or
// written by a release from before the metadata group — seeds the group with it
// (MachineConfig.MetaSeed): it merges every metadata record of its disk into the group,
// with the store's merge rule, so the newest version of each key wins whichever member
// held it. As the oldest voter it may found the group (a whole cluster restored or
// upgraded by a full restart has no group anywhere); the group it founds then answers no
// other call before its own metadata is in, so nothing is decided on an empty group. A
// seed that joins a group merges its records in like any write.

// metaSeed is the progress of this member's seeding.
type metaSeed struct {
	after string // the last key scanned ("": none yet)
	busy  bool   // a page is being read or proposed
	// gate: this member founded the group from its disk; every other call on its replica
	// waits (held) until the seed is in.
	gate bool
	held []*metaCall
	done bool
}

// startSeed starts seeding when the configuration asks for it (the store's marker), once
// the placement is known; founded says this member founded the group.
func (m *Machine) startSeed(founded bool) {
	if !m.cfg.MetaSeed || m.place == nil {
		return
	}
	if m.mg.seed == nil {
		m.mg.seed = &metaSeed{}
	}
	if founded && !m.mg.seed.done {
		m.mg.seed.gate = true
	}
	m.pumpSeed()
}

// seeding reports whether this member founded the group and its seed is not in yet: calls
// on its replica wait.
func (g *metaGroup) seeding() bool { return g.seed != nil && g.seed.gate && !g.seed.done }

// pumpSeed reads the next page of the local disk and merges its metadata records into the
// group; a page that fails (the disk, or the group's time is up) is read again at the next
// tick.
func (m *Machine) pumpSeed() {
	s := m.mg.seed
	if s == nil || s.busy || s.done || m.place == nil {
		return
	}
	s.busy = true
	m.diskOp(DiskOp{Kind: DiskScan, after: s.after, limit: copyPageSize}, func(res DiskResult) {
		if res.err != nil {
			s.busy = false
			return
		}
		var recs []*pb.ReplicaRecord
		size := 0
		var parts [][]*pb.ReplicaRecord
		for i := range res.entries {
			e := &res.entries[i]
			if !m.layout.UnitOf(e.rec.Key).Meta() || e.rec.Version.IsZero() && e.floor == 0 {
				continue
			}
			r := toPB(e, false)
			if n := len(r.Key) + len(r.Value) + recordOverhead; size > 0 && size+n > maxProposalBytes {
				parts, recs, size = append(parts, recs), nil, 0
			}
			recs, size = append(recs, r), size+len(r.Key)+len(r.Value)+recordOverhead
		}
		if len(recs) > 0 {
			parts = append(parts, recs)
		}
		next := func() {
			if len(res.entries) > 0 {
				s.after = res.entries[len(res.entries)-1].rec.Key
			}
			s.busy = false
			if !res.more {
				m.seeded()
				return
			}
			m.pumpSeed()
		}
		left, failed := len(parts), false
		if left == 0 {
			next()
			return
		}
		for _, part := range parts {
			m.callMeta(&metaCall{seed: true, propose: &pb.MetaProposal{Merges: part}, done: func(_ *pb.MetaAnswer, err error) {
				failed = failed || err != nil
				if left--; left > 0 {
					return
				}
				if failed {
					s.busy = false // the page again, at the next tick
					return
				}
				next()
			}})
		}
	})
}

// seeded ends the seed: the calls held meanwhile are made, and the store is told (it
// removes its marker).
func (m *Machine) seeded() {
	s := m.mg.seed
	s.done = true
	held := s.held
	s.held = nil
	if m.cfg.OnMetaSeeded != nil {
		m.cfg.OnMetaSeeded()
	}
	for _, c := range held {
		m.callMeta(c)
	}
}
