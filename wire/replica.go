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
	if _, ok := env.Msg.(*pb.ReplicaEnvelope_Repair); !ok && env.RequestId == 0 {
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
		err = checkRecords("write", m.Write.Records, true, false)
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
	default:
		return nil, malformed("replica frame carries an unknown message %T", m)
	}
	if err != nil {
		return nil, err
	}
	return &env, nil
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
		return nil
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
