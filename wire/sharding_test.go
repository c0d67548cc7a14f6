package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/wire/pb"
)

func sampleCoord() []coordinator.Message {
	return []coordinator.Message{
		coordinator.Register{Incarnation: 3, Proxy: true, Hosted: []coordinator.Hosted{{Shard: "7", Epoch: coordinator.NewEpoch(2, 9)}, {Shard: "8", Epoch: 5, State: coordinator.HostedStopping}}},
		coordinator.Register{Incarnation: 4, NoNewShards: true},
		coordinator.GetShardHome{Shard: "42"},
		coordinator.ShardStarted{Shard: "1", Epoch: 2},
		coordinator.BeginHandOffAck{Shard: "1", Epoch: 2},
		coordinator.ShardStopped{Shard: "1", Epoch: 2},
		coordinator.GracefulShutdownReq{},
		coordinator.NoRegion{Incarnation: 4},
		coordinator.RegisterAck{Term: 7},
		coordinator.ShardHome{Shard: "3", Region: "12D3KooWX", Epoch: 11},
		coordinator.HostShard{Shard: "3", Epoch: 11},
		coordinator.BeginHandOff{Shard: "3", Epoch: 11},
		coordinator.HandOff{Shard: "3", Epoch: 11},
		coordinator.HostShard{Shard: "3", Epoch: 12, Incarnation: 2, After: "12D3KooWA", AfterEpoch: 11},
		coordinator.HandOff{Shard: "3", Epoch: 11, Next: "12D3KooWB", NextEpoch: 12},
		coordinator.HandedOver{Shard: "3", Epoch: 11},
		coordinator.RequestRegister{},
	}
}

func TestCoordRoundTrip(t *testing.T) {
	for _, msg := range sampleCoord() {
		typ, got, err := DecodeCoord(AppendCoord(nil, "counter", msg))
		if err != nil || typ != "counter" || !reflect.DeepEqual(got, msg) {
			t.Errorf("%T: got %q %#v, %v", msg, typ, got, err)
		}
	}
}

func TestCoordRejects(t *testing.T) {
	frame, _ := proto.Marshal(&pb.CoordEnvelope{ProtocolVersion: ProtocolVersion, EntityType: "x", Msg: &pb.CoordEnvelope_HostShard{HostShard: &pb.ShardEpoch{}}})
	if _, _, err := DecodeCoord(frame); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty shard: %v", err)
	}
	frame, _ = proto.Marshal(&pb.CoordEnvelope{ProtocolVersion: ProtocolVersion + 1, EntityType: "x", Msg: &pb.CoordEnvelope_RequestRegister{RequestRegister: &pb.Empty{}}})
	if _, _, err := DecodeCoord(frame); !errors.Is(err, ErrVersion) {
		t.Errorf("version: %v", err)
	}
	frame, _ = proto.Marshal(&pb.CoordEnvelope{ProtocolVersion: ProtocolVersion, Msg: &pb.CoordEnvelope_RequestRegister{RequestRegister: &pb.Empty{}}})
	if _, _, err := DecodeCoord(frame); !errors.Is(err, ErrMalformed) {
		t.Errorf("no type: %v", err)
	}
}

func sampleDeliver() Deliver {
	return Deliver{Type: []byte("counter"), Shard: []byte("17"), Entity: []byte("user-1"), Payload: []byte("inc 1"), Hops: 2, AskID: 99, ReplyTo: []byte("12D3KooWX")}
}

// TestRegionFramesAreProtobuf: the hand-written encoder produces what the generated code
// reads, and the reverse.
func TestRegionFramesAreProtobuf(t *testing.T) {
	d := sampleDeliver()
	var env pb.RegionEnvelope
	if err := proto.Unmarshal(AppendDeliver(nil, &d), &env); err != nil {
		t.Fatal(err)
	}
	got := env.GetDeliver()
	if env.ProtocolVersion != ProtocolVersion || got.EntityType != "counter" || got.Shard != "17" || got.Entity != "user-1" ||
		string(got.Payload) != "inc 1" || got.Hops != 2 || got.AskId != 99 || got.ReplyTo != "12D3KooWX" {
		t.Fatalf("generated decoder read %+v", got)
	}
	frame, _ := proto.Marshal(&pb.RegionEnvelope{ProtocolVersion: ProtocolVersion, Msg: &pb.RegionEnvelope_Reply{Reply: &pb.Reply{AskId: 5, Payload: []byte("7"), Error: "boom", Code: 2}}})
	var dd Deliver
	var r Reply
	kind, err := DecodeRegion(frame, &dd, &r)
	if err != nil || kind != KindReply || r.AskID != 5 || string(r.Payload) != "7" || string(r.Err) != "boom" || r.Code != 2 {
		t.Fatalf("decoded %v %+v %v", kind, r, err)
	}
}

func TestRegionRoundTripWithoutAllocation(t *testing.T) {
	d := sampleDeliver()
	buf := make([]byte, 0, 256)
	var got Deliver
	var r Reply
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendDeliver(buf[:0], &d)
		if _, err := DecodeRegion(buf, &got, &r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per encode+decode", allocs)
	}
	if !bytes.Equal(got.Entity, d.Entity) || !bytes.Equal(got.Payload, d.Payload) || got.AskID != d.AskID || got.Hops != d.Hops {
		t.Errorf("round trip: %+v", got)
	}
	rep := Reply{AskID: 3, Err: []byte("no such entity type")}
	if kind, err := DecodeRegion(AppendReply(nil, &rep), &got, &r); err != nil || kind != KindReply || string(r.Err) != "no such entity type" {
		t.Errorf("reply: %v %+v %v", kind, r, err)
	}
}

func TestRegionRejects(t *testing.T) {
	bad := []Deliver{
		{Shard: []byte("1"), Entity: []byte("e")},                                       // no type
		{Type: []byte("t"), Entity: []byte("e")},                                        // no shard
		{Type: []byte("t"), Shard: []byte("1")},                                         // no entity
		{Type: []byte("t"), Shard: []byte("1"), Entity: []byte("e"), AskID: 1},          // ask without reply_to
		{Type: bytes.Repeat([]byte("t"), 300), Shard: []byte("1"), Entity: []byte("e")}, // long type
		{Type: []byte("t"), Shard: []byte("1"), Entity: []byte("e"), NotHome: true},     // refusal without its epoch
	}
	var d Deliver
	var r Reply
	for i, b := range bad {
		if _, err := DecodeRegion(AppendDeliver(nil, &b), &d, &r); !errors.Is(err, ErrMalformed) {
			t.Errorf("case %d: %v", i, err)
		}
	}
	for _, frame := range [][]byte{{}, {0xff}, {0x08, 0x01}, {0x08, 0x02, 0x12, 0x00}} {
		if _, err := DecodeRegion(frame, &d, &r); err == nil {
			t.Errorf("frame %x accepted", frame)
		}
	}
}

func FuzzDecodeRegion(f *testing.F) {
	d := sampleDeliver()
	f.Add(AppendDeliver(nil, &d))
	f.Add(AppendReply(nil, &Reply{AskID: 1, Payload: []byte("x")}))
	bounced := sampleDeliver()
	bounced.Start, bounced.Epoch, bounced.NotHome, bounced.Home, bounced.HomeEpoch = true, 7, true, []byte("12D3KooWhome"), 9
	f.Add(AppendDeliver(nil, &bounced))
	traced := sampleDeliver()
	traced.Trace = bytes.Repeat([]byte{7}, 25)
	f.Add(AppendDeliver(nil, &traced))
	f.Fuzz(func(t *testing.T, frame []byte) {
		var d Deliver
		var r Reply
		kind, err := DecodeRegion(frame, &d, &r)
		if err != nil {
			return
		}
		var again []byte
		if kind == KindDeliver {
			again = AppendDeliver(nil, &d)
		} else {
			again = AppendReply(nil, &r)
		}
		var d2 Deliver
		var r2 Reply
		if _, err := DecodeRegion(again, &d2, &r2); err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
		if kind == KindDeliver && (d2.Epoch != d.Epoch || d2.NotHome != d.NotHome || d2.HomeEpoch != d.HomeEpoch || d2.Start != d.Start ||
			!bytes.Equal(d2.Trace, d.Trace)) {
			t.Fatalf("round trip changed the epochs or flags: %+v, then %+v", d, d2)
		}
	})
}

func FuzzDecodeCoord(f *testing.F) {
	for _, m := range sampleCoord() {
		f.Add(AppendCoord(nil, "counter", m))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		typ, msg, err := DecodeCoord(frame)
		if err != nil {
			return
		}
		typ2, msg2, err := DecodeCoord(AppendCoord(nil, typ, msg))
		if err != nil || typ2 != typ || !reflect.DeepEqual(msg, msg2) {
			t.Fatalf("re-encoding changed %#v into %#v (%v)", msg, msg2, err)
		}
	})
}
