package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// Limits of the replica protocol (/shardmesh/replica/1, pb.ReplicaEnvelope).
const (
	// MaxReplicaKeyLen is the longest key the replicated store accepts, in bytes.
	MaxReplicaKeyLen = 4096
	// MaxReplicaRecords is the most records (or keys) one replica frame may carry.
	MaxReplicaRecords = 1 << 20
	// MaxReplicaBuckets is the most digest buckets a frame may carry or name.
	MaxReplicaBuckets = 1 << 16
	// maxReplicaError bounds the error text a replica sends back.
	maxReplicaError = 4096
)

// AppendReplica sets env's protocol version and appends its frame to dst.
func AppendReplica(dst []byte, env *pb.ReplicaEnvelope) []byte {
	env.ProtocolVersion = ProtocolVersion
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, env)
	if err != nil {
		panic(fmt.Sprintf("wire: marshal replica frame: %v", err))
	}
	return out
}

// DecodeReplica decodes and validates a replica protocol frame. What it returns holds no
// reference to frame. A request (write, read, digest) and an answer (write_ack, records,
// summaries) carry a nonzero request id; records are checked for a key, a writer when they
// have a version, no value on a tombstone, and sizes within the limits above.
func DecodeReplica(frame []byte) (*pb.ReplicaEnvelope, error) {
	var env pb.ReplicaEnvelope
	if err := proto.Unmarshal(frame, &env); err != nil {
		return nil, malformed("replica frame: %v", err)
	}
	if err := checkVersion("replica", env.ProtocolVersion); err != nil {
		return nil, err
	}
	if !oneWay(env.Msg) && env.RequestId == 0 {
		if env.Msg == nil {
			return nil, malformed("replica frame carries no message")
		}
		return nil, malformed("replica frame %T has no request id", env.Msg)
	}
	var err error
	switch m := env.Msg.(type) {
	case *pb.ReplicaEnvelope_Write:
		if m.Write == nil {
			return nil, malformed("write is missing")
		}
		if len(m.Write.Records) == 0 {
			return nil, malformed("write has no records")
		}
		// A merge (a unit's copy) carries records as stored: fence floors without versions.
		err = checkRecords("write", m.Write.Records, !m.Write.Merge, false)
	case *pb.ReplicaEnvelope_WriteAck:
		err = checkWriteAck(m.WriteAck)
	case *pb.ReplicaEnvelope_Read:
		err = checkRead(m.Read)
	case *pb.ReplicaEnvelope_Records:
		err = checkRecordList("records", m.Records)
	case *pb.ReplicaEnvelope_Repair:
		err = checkRecordList("repair", m.Repair)
	case *pb.ReplicaEnvelope_Digest:
		if m.Digest == nil {
			return nil, malformed("digest is missing")
		}
		if n := len(m.Digest.Buckets); n == 0 || n > MaxReplicaBuckets {
			return nil, malformed("digest has %d buckets (1..%d)", n, MaxReplicaBuckets)
		}
	case *pb.ReplicaEnvelope_Summaries:
		err = checkSummaries(m.Summaries)
	case *pb.ReplicaEnvelope_UnitDigest:
		err = checkUnits(m.UnitDigest)
	case *pb.ReplicaEnvelope_UnitDigests:
		err = checkUnitDigests(m.UnitDigests)
	case *pb.ReplicaEnvelope_Drop:
		if m.Drop == nil {
			return nil, malformed("drop is missing")
		}
		err = checkUnit("drop.unit", m.Drop.Unit)
	case *pb.ReplicaEnvelope_DropAck:
		if m.DropAck == nil {
			return nil, malformed("drop_ack is missing")
		}
		if len(m.DropAck.Error) > maxReplicaError {
			return nil, malformed("drop_ack.error is %d bytes long (at most %d)", len(m.DropAck.Error), maxReplicaError)
		}
	case *pb.ReplicaEnvelope_Collect:
		if m.Collect == nil {
			return nil, malformed("collect is missing")
		}
		err = checkUnit("collect.unit", m.Collect.Unit)
	case *pb.ReplicaEnvelope_Synced:
		err = checkUnit("synced", m.Synced)
	case *pb.ReplicaEnvelope_Raft:
		if n := len(m.Raft); n == 0 || n > MaxRaftFrame {
			return nil, malformed("raft frame is %d bytes long (1..%d)", n, MaxRaftFrame)
		}
	case *pb.ReplicaEnvelope_MetaJoin:
		if m.MetaJoin == 0 {
			return nil, malformed("meta_join names replica 0")
		}
	case *pb.ReplicaEnvelope_MetaRemoved:
		if m.MetaRemoved == 0 {
			return nil, malformed("meta_removed names replica 0")
		}
	case *pb.ReplicaEnvelope_MetaCall:
		err = checkMetaCall(m.MetaCall)
	case *pb.ReplicaEnvelope_MetaAnswer:
		err = checkMetaAnswer(m.MetaAnswer)
	default:
		return nil, malformed("replica frame carries an unknown message %T", m)
	}
	if err != nil {
		return nil, err
	}
	return &env, nil
}

// oneWay reports whether msg is a one-way frame, without a request id.
func oneWay(msg any) bool {
	switch msg.(type) {
	case *pb.ReplicaEnvelope_Repair, *pb.ReplicaEnvelope_Collect, *pb.ReplicaEnvelope_Synced, *pb.ReplicaEnvelope_Raft,
		*pb.ReplicaEnvelope_MetaJoin, *pb.ReplicaEnvelope_MetaRemoved:
		return true
	}
	return false
}

// MaxReplicaUnits is the most units one frame may name.
const MaxReplicaUnits = 1 << 16

// checkUnit validates a shard unit's name: an entity type and a shard id.
func checkUnit(field string, u *pb.ReplicaUnit) error {
	switch {
	case u == nil:
		return malformed("%s is missing", field)
	case u.Type == "" || len(u.Type) > MaxReplicaKeyLen:
		return malformed("%s.type is %d bytes long (1..%d)", field, len(u.Type), MaxReplicaKeyLen)
	case len(u.Shard) > MaxReplicaKeyLen:
		return malformed("%s.shard is %d bytes long (at most %d)", field, len(u.Shard), MaxReplicaKeyLen)
	}
	return nil
}

func checkUnits(l *pb.ReplicaUnits) error {
	if l == nil {
		return malformed("unit_digest is missing")
	}
	if n := len(l.Units); n == 0 || n > MaxReplicaUnits {
		return malformed("unit_digest names %d units (1..%d)", n, MaxReplicaUnits)
	}
	for i, u := range l.Units {
		if err := checkUnit(fmt.Sprintf("unit_digest.units[%d]", i), u); err != nil {
			return err
		}
	}
	return nil
}

func checkUnitDigests(l *pb.ReplicaUnitDigests) error {
	if l == nil {
		return malformed("unit_digests is missing")
	}
	if len(l.Digests) > MaxReplicaUnits {
		return malformed("unit_digests has %d digests (at most %d)", len(l.Digests), MaxReplicaUnits)
	}
	for i, d := range l.Digests {
		if d == nil {
			return malformed("unit_digests.digests[%d] is missing", i)
		}
		if err := checkUnit(fmt.Sprintf("unit_digests.digests[%d].unit", i), d.Unit); err != nil {
			return err
		}
	}
	return nil
}

func checkWriteAck(a *pb.ReplicaWriteAck) error {
	if a == nil {
		return malformed("write_ack is missing")
	}
	if len(a.Refused) > MaxReplicaRecords {
		return malformed("write_ack refuses %d writes (at most %d)", len(a.Refused), MaxReplicaRecords)
	}
	for i, r := range a.Refused {
		if r == nil {
			return malformed("write_ack.refused[%d] is missing", i)
		}
	}
	if len(a.Error) > maxReplicaError {
		return malformed("write_ack.error is %d bytes long (at most %d)", len(a.Error), maxReplicaError)
	}
	return nil
}

func checkRead(r *pb.ReplicaRead) error {
	if r == nil {
		return malformed("read is missing")
	}
	if r.Scan {
		if len(r.Keys) > 0 || len(r.Fences) > 0 {
			return malformed("read is a scan and names %d keys, %d fences", len(r.Keys), len(r.Fences))
		}
		if len(r.Prefix) > MaxReplicaKeyLen {
			return malformed("read.prefix is %d bytes long (at most %d)", len(r.Prefix), MaxReplicaKeyLen)
		}
		if len(r.After) > MaxReplicaKeyLen {
			return malformed("read.after is %d bytes long (at most %d)", len(r.After), MaxReplicaKeyLen)
		}
		return nil
	}
	if len(r.After) > 0 || r.Limit > 0 {
		return malformed("read names keys and a page")
	}
	if n := len(r.Keys); n == 0 || n > MaxReplicaRecords {
		return malformed("read names %d keys (1..%d)", n, MaxReplicaRecords)
	}
	if len(r.Fences) != 0 && len(r.Fences) != len(r.Keys) {
		return malformed("read names %d keys and %d fences", len(r.Keys), len(r.Fences))
	}
	if len(r.Prefix) > 0 {
		return malformed("read names keys and a prefix")
	}
	for i, k := range r.Keys {
		if err := checkReplicaKey(fmt.Sprintf("read.keys[%d]", i), k); err != nil {
			return err
		}
	}
	return nil
}

func checkRecordList(field string, l *pb.ReplicaRecords) error {
	if l == nil {
		return malformed("%s is missing", field)
	}
	if len(l.Error) > maxReplicaError {
		return malformed("%s.error is %d bytes long (at most %d)", field, len(l.Error), maxReplicaError)
	}
	return checkRecords(field, l.Records, false, false)
}

func checkSummaries(s *pb.ReplicaSummaries) error {
	if s == nil {
		return malformed("summaries is missing")
	}
	if len(s.Buckets) > MaxReplicaBuckets {
		return malformed("summaries names %d buckets (at most %d)", len(s.Buckets), MaxReplicaBuckets)
	}
	for i, b := range s.Buckets {
		if b >= MaxReplicaBuckets {
			return malformed("summaries.buckets[%d] is %d (below %d)", i, b, MaxReplicaBuckets)
		}
	}
	return checkRecords("summaries", s.Records, false, true)
}

// checkRecords validates records: versioned says every record must carry a version (a
// write), summary that values are left out.
func checkRecords(field string, recs []*pb.ReplicaRecord, versioned, summary bool) error {
	if len(recs) > MaxReplicaRecords {
		return malformed("%s has %d records (at most %d)", field, len(recs), MaxReplicaRecords)
	}
	for i, r := range recs {
		if r == nil {
			return malformed("%s.records[%d] is missing", field, i)
		}
		if err := checkRecord(r, versioned, summary); err != nil {
			return fmt.Errorf("%s.records[%d]: %w", field, i, err)
		}
	}
	return nil
}

func checkRecord(r *pb.ReplicaRecord, versioned, summary bool) error {
	if err := checkReplicaKey("key", r.Key); err != nil {
		return err
	}
	hasVersion := r.Epoch != 0 || r.Counter != 0 || r.Writer != ""
	switch {
	case hasVersion:
		if r.Counter == 0 {
			return malformed("record %q has a version with counter 0", r.Key)
		}
		if err := checkID("writer", r.Writer); err != nil {
			return err
		}
	case versioned:
		return malformed("record %q has no version", r.Key)
	case r.Deleted || len(r.Value) > 0 || r.ValueHash != 0:
		return malformed("record %q has a value or a tombstone but no version", r.Key)
	}
	if r.Deleted && (len(r.Value) > 0 || r.ValueHash != 0) {
		return malformed("tombstone %q has a value", r.Key)
	}
	if summary && len(r.Value) > 0 {
		return malformed("summary of %q carries a value", r.Key)
	}
	return nil
}

func checkReplicaKey(field string, k []byte) error {
	if len(k) == 0 {
		return malformed("%s is empty", field)
	}
	if len(k) > MaxReplicaKeyLen {
		return malformed("%s is %d bytes long (at most %d)", field, len(k), MaxReplicaKeyLen)
	}
	return nil
}
