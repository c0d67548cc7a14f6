package remember

import (
	"errors"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// partBytes bounds the records of one frame (an answer part, a repair): well under
// p2p.DefaultMaxFrameSize, so that a frame with one largest value still fits.
const partBytes = 1 << 20

// recordOverhead estimates a record's bytes in a frame beyond its key and value.
const recordOverhead = 96

// recordSize estimates e's bytes in a frame.
func recordSize(e *entry) int { return len(e.rec.Key) + len(e.rec.Value) + recordOverhead }

// toPB converts e for a frame; summary leaves the value out and sends its hash instead.
func toPB(e *entry, summary bool) *pb.ReplicaRecord {
	r := &pb.ReplicaRecord{
		Key:     []byte(e.rec.Key),
		Epoch:   e.rec.Version.Epoch,
		Counter: e.rec.Version.Counter,
		Writer:  e.rec.Version.Writer,
		Deleted: e.rec.Deleted,
		Floor:   e.floor,
	}
	if summary {
		r.ValueHash = e.hash
	} else {
		r.Value = e.rec.Value
	}
	return r
}

// fromPB converts a validated frame record (see wire.DecodeReplica); the value hash is
// computed here unless summary (summaries carry it instead of the value).
func fromPB(r *pb.ReplicaRecord, summary bool) entry {
	e := entry{
		rec: Record{
			Key:     string(r.Key),
			Version: Version{Epoch: r.Epoch, Counter: r.Counter, Writer: r.Writer},
			Deleted: r.Deleted,
		},
		floor: r.Floor,
	}
	if len(r.Value) > 0 {
		e.rec.Value = r.Value
	}
	switch {
	case summary:
		e.hash = r.ValueHash
	case !e.rec.Version.IsZero():
		e.hash = valueHash(e.rec.Value, e.rec.Deleted)
	}
	return e
}

func fromPBs(rs []*pb.ReplicaRecord, summary bool) []entry {
	out := make([]entry, len(rs))
	for i, r := range rs {
		out[i] = fromPB(r, summary)
	}
	return out
}

func toPBs(es []entry, summary bool) []*pb.ReplicaRecord {
	out := make([]*pb.ReplicaRecord, len(es))
	for i := range es {
		out[i] = toPB(&es[i], summary)
	}
	return out
}

// parts splits entries into runs of at most partBytes (at least one entry each) and
// calls fn for each, with last true for the final one (also when entries is empty).
func parts(entries []entry, fn func(part []entry, last bool)) {
	start, size := 0, 0
	for i := range entries {
		n := recordSize(&entries[i])
		if size+n > partBytes && i > start {
			fn(entries[start:i], false)
			start, size = i, 0
		}
		size += n
	}
	fn(entries[start:], true)
}

// recordsFrame returns the frame of an answer part; more says a page was cut at its limit.
func recordsFrame(id uint64, part []entry, last, more bool, err error) []byte {
	m := &pb.ReplicaRecords{Records: toPBs(part, false), Last: last, More: more}
	if err != nil {
		m.Error = truncate(err.Error(), 1024)
		m.Refilling = errors.Is(err, ErrRefilling)
	}
	return wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: id, Msg: &pb.ReplicaEnvelope_Records{Records: m}})
}

// repairFrame returns the frame of a one-way repair.
func repairFrame(part []entry) []byte {
	return wire.AppendReplica(nil, &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_Repair{Repair: &pb.ReplicaRecords{Records: toPBs(part, false), Last: true}}})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func keyBytes(keys []string) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}
