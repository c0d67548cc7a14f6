package wire

import (
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/wire/pb"
)

func sampleMessages() []membership.Message {
	st := membership.State{
		Members: []membership.Member{
			{Node: "12D3KooWA", Incarnation: 3, Addrs: []string{"/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWA"}, Roles: []string{"backend", "web"}, AppVersion: "1.2.0", Status: membership.Up, UpNumber: 1, LastClusterSize: 5, Voter: true},
			{Node: "12D3KooWB", Incarnation: 1, Status: membership.Removed, UpNumber: 2},
		},
		Reach: []membership.ReachRow{{Observer: "12D3KooWA", Incarnation: 3, Version: 7, Unreachable: []membership.NodeID{"12D3KooWB"}}},
	}
	return []membership.Message{
		membership.Heartbeat{From: "12D3KooWA", Incarnation: 3, Seq: 99, Digest: 0xdeadbeef, Ack: true},
		membership.Heartbeat{From: "12D3KooWA", Incarnation: 3, Seq: 100, Digest: 7,
			Answer: true, EchoIncarnation: 2, EchoSeq: 41},
		membership.Gossip{From: "12D3KooWA", State: st},
		membership.Gossip{From: "12D3KooWA", State: st, Reply: true, Buckets: []uint64{1, 2, 3, 4}},
		membership.GossipStatus{From: "12D3KooWB", Digest: 9, Buckets: []uint64{5, 6}},
		membership.JoinRequest{Member: st.Members[0], Checks: map[string]string{"sharding.number-of-shards": "1000"}},
		membership.JoinRequest{Member: st.Members[0], Credential: []byte("a member credential")},
		membership.JoinRequest{Member: st.Members[0], AsksNotMember: true},
		membership.NotMember{From: "12D3KooWB", Lowest: "12D3KooWA", SeedsInNone: true},
		membership.JoinReply{From: "12D3KooWA", State: st},
		membership.JoinReply{From: "12D3KooWA", State: st, Credential: []byte("the admitting member's credential")},
		membership.JoinReply{From: "12D3KooWA", Refused: "number-of-shards differs"},
		membership.JoinReply{From: "12D3KooWA", Refused: "was down", Refusal: membership.StopDowned},
		membership.Probe{From: "12D3KooWB", Incarnation: 1, Seq: 4},
		membership.ProbeAck{From: "12D3KooWA", Incarnation: 3, Seq: 4, Digest: 1, YourIncarnation: 1, YourStatus: membership.Down, YourBeat: 17},
	}
}

func TestMembershipRoundTrip(t *testing.T) {
	for _, msg := range sampleMessages() {
		got, err := DecodeMembership(AppendMembership(nil, msg))
		if err != nil {
			t.Fatalf("%T: %v", msg, err)
		}
		if r, ok := got.(membership.JoinReply); ok && len(r.State.Members) == 0 {
			r.State = membership.State{}
			got = r
		}
		if !reflect.DeepEqual(normalize(got), normalize(msg)) {
			t.Errorf("round trip of %T:\n got %#v\nwant %#v", msg, got, msg)
		}
	}
}

// normalize maps empty slices to nil so DeepEqual compares content.
func normalize(m membership.Message) membership.Message {
	fix := func(s *membership.State) {
		if len(s.Members) == 0 {
			s.Members = nil
		}
		if len(s.Reach) == 0 {
			s.Reach = nil
		}
		for i := range s.Members {
			if len(s.Members[i].Addrs) == 0 {
				s.Members[i].Addrs = nil
			}
			if len(s.Members[i].Roles) == 0 {
				s.Members[i].Roles = nil
			}
		}
	}
	switch v := m.(type) {
	case membership.Gossip:
		fix(&v.State)
		return v
	case membership.JoinReply:
		fix(&v.State)
		return v
	}
	return m
}

func TestMembershipRejectsOtherVersions(t *testing.T) {
	frame, _ := proto.Marshal(&pb.MemberEnvelope{ProtocolVersion: ProtocolVersion + 1, Msg: &pb.MemberEnvelope_Probe{Probe: &pb.Probe{From: "x"}}})
	_, err := DecodeMembership(frame)
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("err = %v, want ErrVersion", err)
	}
	t.Log(err)
}

func TestMembershipRejectsBadInput(t *testing.T) {
	bad := map[string]*pb.MemberEnvelope{
		"no message":        {ProtocolVersion: ProtocolVersion},
		"empty from":        {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_Heartbeat{Heartbeat: &pb.Heartbeat{}}},
		"bad status":        {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_JoinRequest{JoinRequest: &pb.JoinRequest{Member: &pb.Member{Node: "a", Status: 9}}}},
		"huge last cluster": {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_JoinRequest{JoinRequest: &pb.JoinRequest{Member: &pb.Member{Node: "a", LastClusterSize: 1 << 31}}}},
		"missing member":    {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_JoinRequest{JoinRequest: &pb.JoinRequest{}}},
		"huge credential":   {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_JoinRequest{JoinRequest: &pb.JoinRequest{Member: &pb.Member{Node: "a"}, Credential: make([]byte, 9000)}}},
		"long id":           {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_Probe{Probe: &pb.Probe{From: string(make([]byte, 300))}}},
		"bad ack status":    {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_ProbeAck{ProbeAck: &pb.ProbeAck{From: "a", YourStatus: 7}}},
		"status no buckets": {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_GossipStatus{GossipStatus: &pb.GossipStatus{From: "a"}}},
		"3 buckets":         {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_GossipStatus{GossipStatus: &pb.GossipStatus{From: "a", Buckets: []uint64{1, 2, 3}}}},
		"512 buckets":       {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_Gossip{Gossip: &pb.Gossip{From: "a", Reply: true, Buckets: make([]uint64, 512)}}},
		"reply no buckets":  {ProtocolVersion: ProtocolVersion, Msg: &pb.MemberEnvelope_Gossip{Gossip: &pb.Gossip{From: "a", Reply: true}}},
	}
	for name, env := range bad {
		frame, _ := proto.Marshal(env)
		if _, err := DecodeMembership(frame); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	if _, err := DecodeMembership([]byte{0xff, 0xff, 0xff}); !errors.Is(err, ErrMalformed) {
		t.Errorf("garbage: err = %v", err)
	}
}

// FuzzDecodeMembership: no input crashes the decoder, and whatever decodes re-encodes to a
// frame that decodes to the same message.
func FuzzDecodeMembership(f *testing.F) {
	for _, m := range sampleMessages() {
		f.Add(AppendMembership(nil, m))
	}
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x02})
	f.Fuzz(func(t *testing.T, frame []byte) {
		msg, err := DecodeMembership(frame)
		if err != nil {
			return
		}
		again, err := DecodeMembership(AppendMembership(nil, msg))
		if err != nil {
			t.Fatalf("re-encoded %T does not decode: %v", msg, err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(msg)) {
			t.Fatalf("re-encoding changed the message:\n%#v\n%#v", msg, again)
		}
	})
}
