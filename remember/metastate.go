package remember

import (
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// metaRecords is the metadata as the group applied it: the state machine of the metadata
// group (remember/metaraft) on a voter. Every voter applies the same log to it in order
// with the decision the replicas' disks take (applyOps: fencing, the merge rule, floors),
// so voters hold the same metadata and answer a call alike.
type metaRecords struct {
	entries map[string]entry
	// changed is told what each apply changed (the Machine writes it to the local disk,
	// for ScanAll and the offline tools; the group, not the disk, is the metadata).
	changed func([]change)
	// skipped counts entries that did not decode (every voter skips them alike).
	skipped uint64
}

func newMetaRecords(changed func([]change)) *metaRecords {
	return &metaRecords{entries: map[string]entry{}, changed: changed}
}

// proposalOps turns a proposal into the operations the disks apply: writes, floors, merges.
func proposalOps(p *pb.MetaProposal) []applyOp {
	var ops []applyOp
	if len(p.Writes) > 0 {
		ops = append(ops, applyOp{kind: opWrite, recs: fromPBs(p.Writes, false)})
	}
	if len(p.FenceKeys) > 0 {
		keys := make([]string, len(p.FenceKeys))
		for i, k := range p.FenceKeys {
			keys[i] = string(k)
		}
		ops = append(ops, applyOp{kind: opFence, keys: keys, fences: p.Fences})
	}
	if len(p.Merges) > 0 {
		ops = append(ops, applyOp{kind: opMerge, recs: fromPBs(p.Merges, false)})
	}
	return ops
}

// Apply implements metaraft.StateMachine: data is a MetaProposal; the result a MetaResult.
func (s *metaRecords) Apply(_ uint64, data []byte) []byte {
	p, err := wire.DecodeMetaProposal(data)
	if err != nil {
		s.skipped++
		return nil
	}
	ops := proposalOps(p)
	before := map[string]entry{}
	for _, k := range applyKeys(ops) {
		before[k] = s.entries[k]
	}
	results, changes := applyOps(ops, before)
	for i := range changes {
		c := &changes[i]
		c.after.rec.Key = c.key // a key with only a floor has no record to name it
		if c.after.absent() {
			delete(s.entries, c.key)
		} else {
			s.entries[c.key] = c.after
		}
	}
	if s.changed != nil && len(changes) > 0 {
		s.changed(changes)
	}
	out := &pb.MetaResult{}
	for i, op := range ops {
		switch op.kind {
		case opWrite:
			for _, r := range results[i].refused {
				out.Refused = append(out.Refused, &pb.ReplicaRefusal{Index: uint32(r.index), Floor: r.need})
			}
		case opFence:
			for j := range results[i].entries {
				results[i].entries[j].rec.Key = op.keys[j]
			}
			out.Fenced = toPBs(results[i].entries, false)
		}
	}
	return wire.Marshal(out)
}

// Snapshot implements metaraft.StateMachine: every entry, in key order.
func (s *metaRecords) Snapshot() ([]byte, error) {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range s.entries {
			if !yield(k) {
				return
			}
		}
	})
	snap := &pb.MetaSnapshot{Records: make([]*pb.ReplicaRecord, len(keys))}
	for i, k := range keys {
		e := s.entries[k]
		snap.Records[i] = toPB(&e, false)
	}
	return wire.Marshal(snap), nil
}

// Restore implements metaraft.StateMachine.
func (s *metaRecords) Restore(data []byte) error {
	snap, err := wire.DecodeMetaSnapshot(data)
	if err != nil {
		return err
	}
	entries := make(map[string]entry, len(snap.Records))
	for _, r := range snap.Records {
		e := fromPB(r, false)
		entries[e.rec.Key] = e
	}
	if s.changed != nil {
		var changes []change
		for k, e := range entries {
			if old := s.entries[k]; !sameState(&old, &e) {
				changes = append(changes, change{key: k, before: old, after: e})
			}
		}
		for k, old := range s.entries {
			if _, kept := entries[k]; !kept {
				changes = append(changes, change{key: k, before: old, after: entry{rec: Record{Key: k}}})
			}
		}
		slices.SortFunc(changes, func(a, b change) int { return strings.Compare(a.key, b.key) })
		s.changed(changes)
	}
	s.entries = entries
	return nil
}

// get returns key's entry (absent: none).
func (s *metaRecords) get(key string) entry {
	if e, ok := s.entries[key]; ok {
		return e
	}
	return entry{rec: Record{Key: key}}
}

// scan returns the live records under prefix after key after, in key order.
func (s *metaRecords) scan(prefix, after string) []entry {
	var out []entry
	for k, e := range s.entries {
		if strings.HasPrefix(k, prefix) && k > after && !e.rec.Deleted && !e.rec.Version.IsZero() {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.rec.Key, b.rec.Key) })
	return out
}
