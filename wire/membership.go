package wire

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// AppendMembership appends the frame of msg to dst.
func AppendMembership(dst []byte, msg membership.Message) []byte {
	env := &pb.MemberEnvelope{ProtocolVersion: ProtocolVersion}
	switch m := msg.(type) {
	case membership.Heartbeat:
		env.Msg = &pb.MemberEnvelope_Heartbeat{Heartbeat: &pb.Heartbeat{From: string(m.From), Incarnation: m.Incarnation, Seq: m.Seq, Digest: m.Digest,
			Ack: m.Ack, Answer: m.Answer, EchoIncarnation: m.EchoIncarnation, EchoSeq: m.EchoSeq}}
	case membership.Gossip:
		env.Msg = &pb.MemberEnvelope_Gossip{Gossip: &pb.Gossip{From: string(m.From), State: stateToPB(&m.State), Reply: m.Reply, Buckets: m.Buckets}}
	case membership.GossipStatus:
		env.Msg = &pb.MemberEnvelope_GossipStatus{GossipStatus: &pb.GossipStatus{From: string(m.From), Digest: m.Digest, Buckets: m.Buckets}}
	case membership.JoinRequest:
		env.Msg = &pb.MemberEnvelope_JoinRequest{JoinRequest: &pb.JoinRequest{Member: memberToPB(&m.Member), Checks: m.Checks, Credential: m.Credential, AsksNotMember: m.AsksNotMember}}
	case membership.NotMember:
		env.Msg = &pb.MemberEnvelope_NotMember{NotMember: &pb.NotMember{From: string(m.From), Lowest: string(m.Lowest), SeedsInNone: m.SeedsInNone}}
	case membership.JoinReply:
		env.Msg = &pb.MemberEnvelope_JoinReply{JoinReply: &pb.JoinReply{From: string(m.From), Refused: m.Refused, Refusal: uint32(m.Refusal), State: stateToPB(&m.State), Credential: m.Credential}}
	case membership.Probe:
		env.Msg = &pb.MemberEnvelope_Probe{Probe: &pb.Probe{From: string(m.From), Incarnation: m.Incarnation, Seq: m.Seq}}
	case membership.ProbeAck:
		env.Msg = &pb.MemberEnvelope_ProbeAck{ProbeAck: &pb.ProbeAck{
			From: string(m.From), Incarnation: m.Incarnation, Seq: m.Seq, Digest: m.Digest,
			YourIncarnation: m.YourIncarnation, YourStatus: uint32(m.YourStatus), YourBeat: m.YourBeat}}
	default:
		panic(fmt.Sprintf("wire: unknown membership message %T", msg))
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, env)
	if err != nil {
		panic(fmt.Sprintf("wire: marshal %T: %v", msg, err)) // only invalid UTF-8 can fail; ids are validated text
	}
	return out
}

// DecodeMembership decodes and validates a membership frame.
func DecodeMembership(frame []byte) (membership.Message, error) {
	var env pb.MemberEnvelope
	if err := proto.Unmarshal(frame, &env); err != nil {
		return nil, malformed("membership frame: %v", err)
	}
	if err := checkVersion("membership", env.ProtocolVersion); err != nil {
		return nil, err
	}
	switch m := env.Msg.(type) {
	case *pb.MemberEnvelope_Heartbeat:
		h := m.Heartbeat
		if err := checkID("heartbeat.from", h.From); err != nil {
			return nil, err
		}
		return membership.Heartbeat{From: membership.NodeID(h.From), Incarnation: h.Incarnation, Seq: h.Seq, Digest: h.Digest,
			Ack: h.Ack, Answer: h.Answer, EchoIncarnation: h.EchoIncarnation, EchoSeq: h.EchoSeq}, nil
	case *pb.MemberEnvelope_Gossip:
		if err := checkID("gossip.from", m.Gossip.From); err != nil {
			return nil, err
		}
		st, err := stateFromPB("gossip.state", m.Gossip.State)
		if err != nil {
			return nil, err
		}
		if err := checkBuckets("gossip.buckets", m.Gossip.Buckets, m.Gossip.Reply); err != nil {
			return nil, err
		}
		return membership.Gossip{From: membership.NodeID(m.Gossip.From), State: st, Reply: m.Gossip.Reply, Buckets: m.Gossip.Buckets}, nil
	case *pb.MemberEnvelope_GossipStatus:
		g := m.GossipStatus
		if err := checkID("gossip_status.from", g.From); err != nil {
			return nil, err
		}
		if err := checkBuckets("gossip_status.buckets", g.Buckets, true); err != nil {
			return nil, err
		}
		return membership.GossipStatus{From: membership.NodeID(g.From), Digest: g.Digest, Buckets: g.Buckets}, nil
	case *pb.MemberEnvelope_JoinRequest:
		mem, err := memberFromPB("join_request.member", m.JoinRequest.Member)
		if err != nil {
			return nil, err
		}
		if len(m.JoinRequest.Checks) > maxCheckCount {
			return nil, malformed("join_request.checks has %d entries (at most %d)", len(m.JoinRequest.Checks), maxCheckCount)
		}
		if len(m.JoinRequest.Credential) > maxCredentialLen {
			return nil, malformed("join_request.credential is %d bytes long (at most %d)", len(m.JoinRequest.Credential), maxCredentialLen)
		}
		return membership.JoinRequest{Member: mem, Checks: m.JoinRequest.Checks, Credential: m.JoinRequest.Credential, AsksNotMember: m.JoinRequest.AsksNotMember}, nil
	case *pb.MemberEnvelope_NotMember:
		if err := checkID("not_member.from", m.NotMember.From); err != nil {
			return nil, err
		}
		if err := checkID("not_member.lowest", m.NotMember.Lowest); err != nil {
			return nil, err
		}
		return membership.NotMember{From: membership.NodeID(m.NotMember.From), Lowest: membership.NodeID(m.NotMember.Lowest), SeedsInNone: m.NotMember.SeedsInNone}, nil
	case *pb.MemberEnvelope_JoinReply:
		r := m.JoinReply
		if err := checkID("join_reply.from", r.From); err != nil {
			return nil, err
		}
		if len(r.Refused) > maxStringLen {
			return nil, malformed("join_reply.refused is %d bytes long", len(r.Refused))
		}
		st, err := stateFromPB("join_reply.state", r.State)
		if err != nil {
			return nil, err
		}
		if len(r.Credential) > maxCredentialLen {
			return nil, malformed("join_reply.credential is %d bytes long (at most %d)", len(r.Credential), maxCredentialLen)
		}
		refusal := membership.StopReason(r.Refusal)
		if r.Refusal > uint32(membership.StopSuperseded) {
			refusal = membership.StopJoinRefused // of a later release: refused all the same
		}
		return membership.JoinReply{From: membership.NodeID(r.From), Refused: r.Refused, Refusal: refusal, State: st, Credential: r.Credential}, nil
	case *pb.MemberEnvelope_Probe:
		if err := checkID("probe.from", m.Probe.From); err != nil {
			return nil, err
		}
		return membership.Probe{From: membership.NodeID(m.Probe.From), Incarnation: m.Probe.Incarnation, Seq: m.Probe.Seq}, nil
	case *pb.MemberEnvelope_ProbeAck:
		a := m.ProbeAck
		if err := checkID("probe_ack.from", a.From); err != nil {
			return nil, err
		}
		if a.YourStatus > uint32(membership.Removed) {
			return nil, malformed("probe_ack.your_status = %d is not a member status", a.YourStatus)
		}
		return membership.ProbeAck{From: membership.NodeID(a.From), Incarnation: a.Incarnation, Seq: a.Seq, Digest: a.Digest,
			YourIncarnation: a.YourIncarnation, YourStatus: membership.Status(a.YourStatus), YourBeat: a.YourBeat}, nil
	case nil:
		return nil, malformed("membership frame carries no message")
	default:
		return nil, malformed("membership frame carries an unknown message %T", m)
	}
}

func memberToPB(m *membership.Member) *pb.Member {
	return &pb.Member{Node: string(m.Node), Incarnation: m.Incarnation, Addrs: m.Addrs, Roles: m.Roles,
		AppVersion: string(m.AppVersion), Status: uint32(m.Status), UpNumber: m.UpNumber, LastClusterSize: m.LastClusterSize, Voter: m.Voter}
}

func memberFromPB(field string, m *pb.Member) (membership.Member, error) {
	if m == nil {
		return membership.Member{}, malformed("%s is missing", field)
	}
	if err := checkID(field+".node", m.Node); err != nil {
		return membership.Member{}, err
	}
	if m.Status > uint32(membership.Removed) {
		return membership.Member{}, malformed("%s.status = %d is not a member status", field, m.Status)
	}
	if m.LastClusterSize > maxMembers {
		return membership.Member{}, malformed("%s.last_cluster_size = %d is more than %d members", field, m.LastClusterSize, maxMembers)
	}
	if err := checkStrings(field+".addrs", m.Addrs, maxListLen); err != nil {
		return membership.Member{}, err
	}
	if err := checkStrings(field+".roles", m.Roles, maxListLen); err != nil {
		return membership.Member{}, err
	}
	if len(m.AppVersion) > maxStringLen {
		return membership.Member{}, malformed("%s.app_version is %d bytes long", field, len(m.AppVersion))
	}
	roles := slices.Clone(m.Roles)
	slices.Sort(roles)
	return membership.Member{Node: membership.NodeID(m.Node), Incarnation: m.Incarnation, Addrs: m.Addrs, Roles: slices.Compact(roles),
		AppVersion: membership.Version(m.AppVersion), Status: membership.Status(m.Status), UpNumber: m.UpNumber,
		LastClusterSize: m.LastClusterSize, Voter: m.Voter}, nil
}

func stateToPB(s *membership.State) *pb.State {
	out := &pb.State{Members: make([]*pb.Member, len(s.Members)), Reach: make([]*pb.ReachRow, len(s.Reach))}
	for i := range s.Members {
		out.Members[i] = memberToPB(&s.Members[i])
	}
	for i, r := range s.Reach {
		ids := make([]string, len(r.Unreachable))
		for j, u := range r.Unreachable {
			ids[j] = string(u)
		}
		out.Reach[i] = &pb.ReachRow{Observer: string(r.Observer), Incarnation: r.Incarnation, Version: r.Version, Unreachable: ids}
	}
	return out
}

func stateFromPB(field string, s *pb.State) (membership.State, error) {
	if s == nil {
		return membership.State{}, nil
	}
	if len(s.Members) > maxMembers || len(s.Reach) > maxMembers {
		return membership.State{}, malformed("%s holds %d members and %d reachability rows (at most %d)", field, len(s.Members), len(s.Reach), maxMembers)
	}
	out := membership.State{Members: make([]membership.Member, 0, len(s.Members)), Reach: make([]membership.ReachRow, 0, len(s.Reach))}
	for i, m := range s.Members {
		mem, err := memberFromPB(fmt.Sprintf("%s.members[%d]", field, i), m)
		if err != nil {
			return membership.State{}, err
		}
		out.Members = append(out.Members, mem)
	}
	for i, r := range s.Reach {
		f := fmt.Sprintf("%s.reach[%d]", field, i)
		if err := checkID(f+".observer", r.Observer); err != nil {
			return membership.State{}, err
		}
		if len(r.Unreachable) > maxMembers {
			return membership.State{}, malformed("%s.unreachable has %d entries", f, len(r.Unreachable))
		}
		ids := make([]membership.NodeID, 0, len(r.Unreachable))
		for _, u := range r.Unreachable {
			if err := checkID(f+".unreachable", u); err != nil {
				return membership.State{}, err
			}
			ids = append(ids, membership.NodeID(u))
		}
		slices.Sort(ids)
		out.Reach = append(out.Reach, membership.ReachRow{Observer: membership.NodeID(r.Observer), Incarnation: r.Incarnation, Version: r.Version, Unreachable: slices.Compact(ids)})
	}
	return out, nil
}

// maxBuckets bounds the buckets of a push-pull exchange (membership.bucketCount's largest).
const maxBuckets = 256

// checkBuckets validates the bucket digests of a push-pull exchange: a power of two up to
// maxBuckets when required, none otherwise allowed too.
func checkBuckets(field string, buckets []uint64, required bool) error {
	n := len(buckets)
	switch {
	case n == 0 && !required:
		return nil
	case n == 0:
		return malformed("%s is empty", field)
	case n > maxBuckets || n&(n-1) != 0:
		return malformed("%s has %d entries (a power of two up to %d)", field, n, maxBuckets)
	}
	return nil
}
