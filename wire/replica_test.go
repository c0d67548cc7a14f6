package wire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/wire/pb"
)

func sampleReplica() []*pb.ReplicaEnvelope {
	rec := &pb.ReplicaRecord{Key: []byte("re/counter/7/user-1"), Value: []byte("42"), Epoch: 3, Counter: 99, Writer: "12D3KooWX"}
	tomb := &pb.ReplicaRecord{Key: []byte("re/counter/7/user-2"), Counter: 100, Writer: "12D3KooWX", Deleted: true, Floor: 4}
	floorOnly := &pb.ReplicaRecord{Key: []byte("state/x"), Floor: 9}
	summary := &pb.ReplicaRecord{Key: []byte("k"), Counter: 1, Writer: "12D3KooWY", ValueHash: 0xfeed}
	return []*pb.ReplicaEnvelope{
		{RequestId: 1, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{Records: []*pb.ReplicaRecord{rec, tomb}}}},
		{RequestId: 1, Msg: &pb.ReplicaEnvelope_WriteAck{WriteAck: &pb.ReplicaWriteAck{Refused: []*pb.ReplicaRefusal{{Index: 1, Floor: 5}}}}},
		{RequestId: 2, Msg: &pb.ReplicaEnvelope_WriteAck{WriteAck: &pb.ReplicaWriteAck{Error: "disk full"}}},
		{RequestId: 3, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Keys: [][]byte{[]byte("a"), []byte("b\xff")}, Fences: []uint64{0, 7}}}},
		{RequestId: 4, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Scan: true, Prefix: []byte("re/counter/")}}},
		{RequestId: 3, Msg: &pb.ReplicaEnvelope_Records{Records: &pb.ReplicaRecords{Records: []*pb.ReplicaRecord{rec, tomb, floorOnly}, Last: true}}},
		{Msg: &pb.ReplicaEnvelope_Repair{Repair: &pb.ReplicaRecords{Records: []*pb.ReplicaRecord{rec}, Last: true}}},
		{RequestId: 5, Msg: &pb.ReplicaEnvelope_Digest{Digest: &pb.ReplicaDigest{Buckets: make([]uint64, 1024)}}},
		{RequestId: 5, Msg: &pb.ReplicaEnvelope_Summaries{Summaries: &pb.ReplicaSummaries{Buckets: []uint32{3, 900}, Records: []*pb.ReplicaRecord{summary, tomb}}}},
		{RequestId: 5, Msg: &pb.ReplicaEnvelope_Summaries{Summaries: &pb.ReplicaSummaries{}}},
	}
}

func TestReplicaRoundTrip(t *testing.T) {
	for _, env := range sampleReplica() {
		got, err := DecodeReplica(AppendReplica(nil, env))
		if err != nil {
			t.Fatalf("%T: %v", env.Msg, err)
		}
		if !proto.Equal(got, env) {
			t.Errorf("%T: decoded %v", env.Msg, got)
		}
	}
}

func TestReplicaRejects(t *testing.T) {
	rec := func(mod func(*pb.ReplicaRecord)) *pb.ReplicaRecord {
		r := &pb.ReplicaRecord{Key: []byte("k"), Value: []byte("v"), Counter: 1, Writer: "w"}
		mod(r)
		return r
	}
	write := func(r *pb.ReplicaRecord) *pb.ReplicaEnvelope {
		return &pb.ReplicaEnvelope{RequestId: 1, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{Records: []*pb.ReplicaRecord{r}}}}
	}
	records := func(r *pb.ReplicaRecord) *pb.ReplicaEnvelope {
		return &pb.ReplicaEnvelope{RequestId: 1, Msg: &pb.ReplicaEnvelope_Records{Records: &pb.ReplicaRecords{Records: []*pb.ReplicaRecord{r}}}}
	}
	long := make([]byte, MaxReplicaKeyLen+1)
	bad := map[string]*pb.ReplicaEnvelope{
		"no message":         {RequestId: 1},
		"request without id": {Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Keys: [][]byte{[]byte("k")}}}},
		"empty write":        {RequestId: 1, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{}}},
		"write, no key":      write(rec(func(r *pb.ReplicaRecord) { r.Key = nil })),
		"write, long key":    write(rec(func(r *pb.ReplicaRecord) { r.Key = long })),
		"write, no version":  write(rec(func(r *pb.ReplicaRecord) { r.Counter, r.Writer = 0, "" })),
		"write, no writer":   write(rec(func(r *pb.ReplicaRecord) { r.Writer = "" })),
		"write, counter 0":   write(rec(func(r *pb.ReplicaRecord) { r.Counter, r.Epoch = 0, 3 })),
		"tombstone, value":   records(rec(func(r *pb.ReplicaRecord) { r.Deleted = true })),
		"unversioned value":  records(rec(func(r *pb.ReplicaRecord) { r.Counter, r.Writer = 0, "" })),
		"read, no keys":      {RequestId: 1, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{}}},
		"read, fences count": {RequestId: 1, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Keys: [][]byte{[]byte("k")}, Fences: []uint64{1, 2}}}},
		"scan with keys":     {RequestId: 1, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Scan: true, Keys: [][]byte{[]byte("k")}}}},
		"read, empty key":    {RequestId: 1, Msg: &pb.ReplicaEnvelope_Read{Read: &pb.ReplicaRead{Keys: [][]byte{nil}}}},
		"empty digest":       {RequestId: 1, Msg: &pb.ReplicaEnvelope_Digest{Digest: &pb.ReplicaDigest{}}},
		"summary with value": {RequestId: 1, Msg: &pb.ReplicaEnvelope_Summaries{Summaries: &pb.ReplicaSummaries{Records: []*pb.ReplicaRecord{rec(func(*pb.ReplicaRecord) {})}}}},
		"summary bucket":     {RequestId: 1, Msg: &pb.ReplicaEnvelope_Summaries{Summaries: &pb.ReplicaSummaries{Buckets: []uint32{MaxReplicaBuckets}}}},
		"empty record":       {RequestId: 1, Msg: &pb.ReplicaEnvelope_Records{Records: &pb.ReplicaRecords{Records: []*pb.ReplicaRecord{{}}}}},
		"long error":         {RequestId: 1, Msg: &pb.ReplicaEnvelope_WriteAck{WriteAck: &pb.ReplicaWriteAck{Error: string(long)}}},
	}
	for name, env := range bad {
		env.ProtocolVersion = ProtocolVersion
		frame, err := proto.Marshal(env)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := DecodeReplica(frame); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	frame, _ := proto.Marshal(&pb.ReplicaEnvelope{ProtocolVersion: ProtocolVersion + 1, RequestId: 1, Msg: &pb.ReplicaEnvelope_Digest{Digest: &pb.ReplicaDigest{Buckets: []uint64{1}}}})
	if _, err := DecodeReplica(frame); !errors.Is(err, ErrVersion) {
		t.Errorf("another version: %v", err)
	}
	for _, frame := range [][]byte{{}, {0xff}, {0x08, 0x01}, {0x08, 0x01, 0x10, 0x01, 0x1a, 0x03, 0x0a, 0x01, 0x00}} {
		if _, err := DecodeReplica(frame); err == nil {
			t.Errorf("frame %x accepted", frame)
		}
	}
}

func FuzzDecodeReplica(f *testing.F) {
	for _, env := range sampleReplica() {
		f.Add(AppendReplica(nil, env))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		env, err := DecodeReplica(frame)
		if err != nil {
			return
		}
		again, err := DecodeReplica(AppendReplica(nil, env))
		if err != nil || !proto.Equal(env, again) {
			t.Fatalf("re-encoding changed %v into %v (%v)", env, again, err)
		}
	})
}
