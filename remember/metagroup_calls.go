package remember

import (
	"github.com/shardmesh/shardmesh/wire/pb"
)

// The store's calls on metadata keys, made in the metadata group (metagroup.go) rather
// than by quorum rounds: the same answers, the same errors.

// maxProposalBytes bounds the writes of one proposal (a log entry, sent whole in a frame);
// a larger call goes in several, each applied on its own.
const maxProposalBytes = partBytes / 2

// writeMeta makes call id, writes of metadata keys only: proposals of at most
// maxProposalBytes, each write with its version assigned here as a round's would be. A
// refused write fails the call with a *FencedError for the first one refused; the call is
// answered once every proposal is.
func (m *Machine) writeMeta(id CallID, ws []Write, done func(Answer)) {
	var parts [][]Write
	for start, size, i := 0, 0, 0; i <= len(ws); i++ {
		if i == len(ws) || size > 0 && size+len(ws[i].Key)+len(ws[i].Value) > maxProposalBytes {
			parts = append(parts, ws[start:i])
			start, size = i, 0
		}
		if i < len(ws) {
			size += len(ws[i].Key) + len(ws[i].Value) + recordOverhead
		}
	}
	left, first := len(parts), error(nil)
	for _, part := range parts {
		p := &pb.MetaProposal{Writes: make([]*pb.ReplicaRecord, len(part))}
		for i, w := range part {
			e := entry{rec: Record{Key: w.Key, Deleted: w.Delete, Version: Version{Epoch: w.Epoch, Counter: m.tick(), Writer: string(m.self)}}}
			if !w.Delete {
				e.rec.Value = w.Value
			}
			p.Writes[i] = toPB(&e, false)
		}
		m.callMeta(&metaCall{propose: p, done: func(a *pb.MetaAnswer, err error) {
			if err == nil && len(a.Result.Refused) > 0 {
				if r := a.Result.Refused[0]; int(r.Index) < len(part) {
					err = &FencedError{Key: part[r.Index].Key, Epoch: part[r.Index].Epoch, Need: r.Floor}
				}
			}
			if first == nil {
				first = err
			}
			if left--; left == 0 {
				done(Answer{Call: id, Err: first})
			}
		}})
	}
}

// getMeta makes call id, a Get of a metadata key: a linearizable read, or with fence above
// 0 a proposal that raises the key's floor and answers its entry.
func (m *Machine) getMeta(id CallID, key string, fence uint64) {
	c := &metaCall{}
	if fence > 0 {
		c.propose = &pb.MetaProposal{FenceKeys: [][]byte{[]byte(key)}, Fences: []uint64{fence}}
	} else {
		c.read = &pb.ReplicaRead{Keys: [][]byte{[]byte(key)}}
	}
	c.done = func(a *pb.MetaAnswer, err error) {
		if err != nil {
			m.answerCall(Answer{Call: id, Err: err})
			return
		}
		recs := a.Records
		if a.Result != nil {
			recs = a.Result.Fenced
		}
		if len(recs) != 1 {
			m.answerCall(Answer{Call: id, Err: &MetaError{Cause: errAnswerShape}})
			return
		}
		e := fromPB(recs[0], false)
		m.answerCall(Answer{Call: id, Record: e.rec, Found: !e.rec.Version.IsZero() && !e.rec.Deleted})
	}
	m.callMeta(c)
}

// scanMeta makes call id, a Scan of a metadata prefix: a linearizable read of its live
// records.
func (m *Machine) scanMeta(id CallID, prefix string) {
	m.callMeta(&metaCall{read: &pb.ReplicaRead{Scan: true, Prefix: []byte(prefix)}, done: func(a *pb.MetaAnswer, err error) {
		if err != nil {
			m.answerCall(Answer{Call: id, Err: err})
			return
		}
		recs := fromPBs(a.Records, false)
		out := make([]Record, len(recs))
		for i := range recs {
			out[i] = recs[i].rec
		}
		m.answerCall(Answer{Call: id, Records: out})
	}})
}
