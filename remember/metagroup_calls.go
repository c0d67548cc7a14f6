package remember

import (
	"github.com/shardmesh/shardmesh/wire/pb"
)

// The store's calls on metadata keys, made in the metadata group (metagroup.go) rather
// than by quorum rounds: the same answers, the same errors.

// writeMeta makes call id, writes of metadata keys only: one proposal, each write with its
// version assigned here as a round's would be. A refused write fails the call with a
// *FencedError for the first one refused.
func (m *Machine) writeMeta(id CallID, ws []Write, done func(Answer)) {
	p := &pb.MetaProposal{Writes: make([]*pb.ReplicaRecord, len(ws))}
	for i, w := range ws {
		e := entry{rec: Record{Key: w.Key, Deleted: w.Delete, Version: Version{Epoch: w.Epoch, Counter: m.tick(), Writer: string(m.self)}}}
		if !w.Delete {
			e.rec.Value = w.Value
		}
		p.Writes[i] = toPB(&e, false)
	}
	m.callMeta(&metaCall{propose: p, done: func(a *pb.MetaAnswer, err error) {
		if err == nil && len(a.Result.Refused) > 0 {
			r := a.Result.Refused[0]
			if int(r.Index) < len(ws) {
				err = &FencedError{Key: ws[r.Index].Key, Epoch: ws[r.Index].Epoch, Need: r.Floor}
			}
		}
		done(Answer{Call: id, Err: err})
	}})
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
