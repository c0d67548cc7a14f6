package remember

import (
	"fmt"
	"slices"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// A replica that dropped its copy of a unit (a move took it out of the set) refuses the
// unit's records that still come to it from before: a write routed by a configuration
// that named it and arriving after the drop — its round ended at the other replicas'
// quorum, the frame was late — or written by a host whose configuration was since
// replaced; and read repairs of rounds started before. Before, such records stayed on a
// member that no set names: never read, never collected, and merged back into the set by
// anti-entropy should the member be named again (reminder soak seed 20: thirteen reminders
// written by a caretaker's joint configuration stayed on its former replica).
//
// The fence is the generation of the configuration that no longer names the replica
// (ReplicaDrop.config_gen): writes carry their units' generations, and those of an
// earlier one, or none, are refused. A configuration that names the replica again is a
// later generation, so its writes pass; so do the copies of a later move (which lift the
// fence: markCopy). The fence lives as long as the process: a frame sent to a member
// before it restarted does not reach the new process (its stream is gone with it).

// dropFence is the fence of a unit this replica dropped.
type dropFence struct {
	gen  uint64   // the generation of the configuration that left this replica out
	mark moveMark // the drop's move: a copy of a later move lifts the fence
}

// fenceDropped notes that this replica dropped its copy of u under configuration gen
// (0: a configuration from before generations, which fences nothing).
func (m *Machine) fenceDropped(u Unit, gen uint64, mark moveMark) {
	if gen == 0 {
		return
	}
	if f, ok := m.dropped[u]; !ok || gen > f.gen {
		m.dropped[u] = dropFence{gen: gen, mark: mark}
	}
}

// liftDropFence lifts u's fence when a copy of a move after the drop reaches this replica.
func (m *Machine) liftDropFence(u Unit, mark moveMark) {
	if f, ok := m.dropped[u]; ok && mark.after(f.mark) {
		delete(m.dropped, u)
	}
}

// staleWrite returns an error when one of recs is of a unit this replica dropped under a
// later configuration than the one gens (the frame's unit_gens) routed it by; a write of
// a later one lifts the fence.
func (m *Machine) staleWrite(recs []entry, gens []*pb.UnitGen) error {
	if len(m.dropped) == 0 {
		return nil
	}
	for _, e := range recs {
		u := m.layout.UnitOf(e.rec.Key)
		f, ok := m.dropped[u]
		if !ok {
			continue
		}
		gen := genOf(gens, u)
		if gen <= f.gen {
			return fmt.Errorf("%w: this replica dropped its copy of %s under replica configuration %d, the write was routed by %d", ErrStaleConfig, u, f.gen, gen)
		}
		delete(m.dropped, u)
	}
	return nil
}

// staleRepair reports whether a repair of recs would bring back records of a unit this
// replica dropped.
func (m *Machine) staleRepair(recs []entry) bool {
	if len(m.dropped) == 0 {
		return false
	}
	for _, e := range recs {
		if _, ok := m.dropped[m.layout.UnitOf(e.rec.Key)]; ok {
			return true
		}
	}
	return false
}

// genOf returns u's generation in gens (0 when it is not there).
func genOf(gens []*pb.UnitGen, u Unit) uint64 {
	for _, g := range gens {
		if unitOf(g.GetUnit()) == u {
			return g.GetGen()
		}
	}
	return 0
}

// roundGens returns the configuration generations of the units a write round's calls
// were routed by, for its frames (the highest, should two calls differ).
func roundGens(calls []*writeCall) []*pb.UnitGen {
	var out []*pb.UnitGen
	for _, c := range calls {
		for _, q := range c.quorums {
			if q.unit.Meta() {
				continue
			}
			i := slices.IndexFunc(out, func(g *pb.UnitGen) bool { return g.Unit.Type == q.unit.Type && g.Unit.Shard == q.unit.Shard })
			if i < 0 {
				out = append(out, &pb.UnitGen{Unit: unitPB(q.unit), Gen: q.gen})
			} else {
				out[i].Gen = max(out[i].Gen, q.gen)
			}
		}
	}
	return out
}
