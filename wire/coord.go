package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// AppendCoord appends the frame of a coordinator protocol message of entity type typ.
func AppendCoord(dst []byte, typ string, msg coordinator.Message) []byte {
	env := &pb.CoordEnvelope{ProtocolVersion: ProtocolVersion, EntityType: typ}
	se := func(s shard.ID, e coordinator.Epoch) *pb.ShardEpoch {
		return &pb.ShardEpoch{Shard: string(s), Epoch: uint64(e)}
	}
	switch m := msg.(type) {
	case coordinator.Register:
		r := &pb.Register{Incarnation: m.Incarnation, Proxy: m.Proxy, NoNewShards: m.NoNewShards}
		for _, h := range m.Hosted {
			r.Hosted = append(r.Hosted, &pb.Hosted{Shard: string(h.Shard), Epoch: uint64(h.Epoch), Stopping: h.State == coordinator.HostedStopping})
		}
		env.Msg = &pb.CoordEnvelope_Register{Register: r}
	case coordinator.GetShardHome:
		env.Msg = &pb.CoordEnvelope_GetShardHome{GetShardHome: &pb.GetShardHome{Shard: string(m.Shard)}}
	case coordinator.ShardStarted:
		env.Msg = &pb.CoordEnvelope_ShardStarted{ShardStarted: se(m.Shard, m.Epoch)}
	case coordinator.BeginHandOffAck:
		env.Msg = &pb.CoordEnvelope_BeginHandOffAck{BeginHandOffAck: se(m.Shard, m.Epoch)}
	case coordinator.ShardStopped:
		stopped := se(m.Shard, m.Epoch)
		stopped.Entities = Count32(m.Entities)
		env.Msg = &pb.CoordEnvelope_ShardStopped{ShardStopped: stopped}
	case coordinator.GracefulShutdownReq:
		env.Msg = &pb.CoordEnvelope_GracefulShutdownReq{GracefulShutdownReq: &pb.Empty{}}
	case coordinator.NoRegion:
		env.Msg = &pb.CoordEnvelope_NoRegion{NoRegion: &pb.NoRegion{Incarnation: m.Incarnation}}
	case coordinator.RegisterAck:
		env.Msg = &pb.CoordEnvelope_RegisterAck{RegisterAck: &pb.RegisterAck{Term: m.Term}}
	case coordinator.ShardHome:
		env.Msg = &pb.CoordEnvelope_Home{Home: &pb.ShardHome{Shard: string(m.Shard), Region: string(m.Region), Epoch: uint64(m.Epoch)}}
	case coordinator.HostShard:
		host := se(m.Shard, m.Epoch)
		host.Incarnation = m.Incarnation
		host.Peer, host.PeerEpoch = string(m.After), uint64(m.AfterEpoch)
		env.Msg = &pb.CoordEnvelope_HostShard{HostShard: host}
	case coordinator.BeginHandOff:
		env.Msg = &pb.CoordEnvelope_BeginHandOff{BeginHandOff: se(m.Shard, m.Epoch)}
	case coordinator.HandOff:
		handOff := se(m.Shard, m.Epoch)
		handOff.Peer, handOff.PeerEpoch = string(m.Next), uint64(m.NextEpoch)
		env.Msg = &pb.CoordEnvelope_HandOff{HandOff: handOff}
	case coordinator.HandedOver:
		env.Msg = &pb.CoordEnvelope_HandedOver{HandedOver: se(m.Shard, m.Epoch)}
	case coordinator.RequestRegister:
		env.Msg = &pb.CoordEnvelope_RequestRegister{RequestRegister: &pb.Empty{}}
	default:
		panic(fmt.Sprintf("wire: unknown coordinator message %T", msg))
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, env)
	if err != nil {
		panic(fmt.Sprintf("wire: marshal %T: %v", msg, err))
	}
	return out
}

// DecodeCoord decodes and validates a coordinator protocol frame.
func DecodeCoord(frame []byte) (typ string, msg coordinator.Message, err error) {
	var env pb.CoordEnvelope
	if err := proto.Unmarshal(frame, &env); err != nil {
		return "", nil, malformed("coordination frame: %v", err)
	}
	if err := checkVersion("coordination", env.ProtocolVersion); err != nil {
		return "", nil, err
	}
	if err := checkID("entity_type", env.EntityType); err != nil {
		return "", nil, err
	}
	shardEpoch := func(field string, se *pb.ShardEpoch) (shard.ID, coordinator.Epoch, error) {
		if se == nil {
			return "", 0, malformed("%s is missing", field)
		}
		if err := checkID(field+".shard", se.Shard); err != nil {
			return "", 0, err
		}
		return shard.ID(se.Shard), coordinator.Epoch(se.Epoch), nil
	}
	// peer returns a message's optional member (a next or old home), checked when set.
	peer := func(field string, se *pb.ShardEpoch) (membership.NodeID, error) {
		if se.Peer == "" {
			return "", nil
		}
		if err := checkID(field+".peer", se.Peer); err != nil {
			return "", err
		}
		return membership.NodeID(se.Peer), nil
	}
	switch m := env.Msg.(type) {
	case *pb.CoordEnvelope_Register:
		r := m.Register
		if r == nil {
			return "", nil, malformed("register is missing")
		}
		if len(r.Hosted) > maxMembers {
			return "", nil, malformed("register.hosted has %d shards", len(r.Hosted))
		}
		reg := coordinator.Register{Incarnation: r.Incarnation, Proxy: r.Proxy, NoNewShards: r.NoNewShards}
		for i, h := range r.Hosted {
			if h == nil {
				return "", nil, malformed("register.hosted[%d] is missing", i)
			}
			if err := checkID(fmt.Sprintf("register.hosted[%d].shard", i), h.Shard); err != nil {
				return "", nil, err
			}
			state := coordinator.HostedActive
			if h.Stopping {
				state = coordinator.HostedStopping
			}
			reg.Hosted = append(reg.Hosted, coordinator.Hosted{Shard: shard.ID(h.Shard), Epoch: coordinator.Epoch(h.Epoch), State: state})
		}
		msg = reg
	case *pb.CoordEnvelope_GetShardHome:
		if m.GetShardHome == nil {
			return "", nil, malformed("get_shard_home is missing")
		}
		if err := checkID("get_shard_home.shard", m.GetShardHome.Shard); err != nil {
			return "", nil, err
		}
		msg = coordinator.GetShardHome{Shard: shard.ID(m.GetShardHome.Shard)}
	case *pb.CoordEnvelope_ShardStarted:
		s, e, err := shardEpoch("shard_started", m.ShardStarted)
		if err != nil {
			return "", nil, err
		}
		msg = coordinator.ShardStarted{Shard: s, Epoch: e}
	case *pb.CoordEnvelope_BeginHandOffAck:
		s, e, err := shardEpoch("begin_hand_off_ack", m.BeginHandOffAck)
		if err != nil {
			return "", nil, err
		}
		msg = coordinator.BeginHandOffAck{Shard: s, Epoch: e}
	case *pb.CoordEnvelope_ShardStopped:
		s, e, err := shardEpoch("shard_stopped", m.ShardStopped)
		if err != nil {
			return "", nil, err
		}
		msg = coordinator.ShardStopped{Shard: s, Epoch: e, Entities: int(m.ShardStopped.GetEntities())}
	case *pb.CoordEnvelope_GracefulShutdownReq:
		msg = coordinator.GracefulShutdownReq{}
	case *pb.CoordEnvelope_NoRegion:
		if m.NoRegion == nil {
			return "", nil, malformed("no_region is missing")
		}
		msg = coordinator.NoRegion{Incarnation: m.NoRegion.Incarnation}
	case *pb.CoordEnvelope_RegisterAck:
		if m.RegisterAck == nil {
			return "", nil, malformed("register_ack is missing")
		}
		msg = coordinator.RegisterAck{Term: m.RegisterAck.Term}
	case *pb.CoordEnvelope_Home:
		h := m.Home
		if h == nil {
			return "", nil, malformed("shard_home is missing")
		}
		if err := checkID("shard_home.shard", h.Shard); err != nil {
			return "", nil, err
		}
		if err := checkID("shard_home.region", h.Region); err != nil {
			return "", nil, err
		}
		msg = coordinator.ShardHome{Shard: shard.ID(h.Shard), Region: membership.NodeID(h.Region), Epoch: coordinator.Epoch(h.Epoch)}
	case *pb.CoordEnvelope_HostShard:
		s, e, err := shardEpoch("host_shard", m.HostShard)
		if err != nil {
			return "", nil, err
		}
		after, err := peer("host_shard", m.HostShard)
		if err != nil {
			return "", nil, err
		}
		msg = coordinator.HostShard{Shard: s, Epoch: e, Incarnation: m.HostShard.GetIncarnation(), After: after, AfterEpoch: coordinator.Epoch(m.HostShard.PeerEpoch)}
	case *pb.CoordEnvelope_BeginHandOff:
		s, e, err := shardEpoch("begin_hand_off", m.BeginHandOff)
		if err != nil {
			return "", nil, err
		}
		msg = coordinator.BeginHandOff{Shard: s, Epoch: e}
	case *pb.CoordEnvelope_HandOff:
		s, e, err := shardEpoch("hand_off", m.HandOff)
		if err != nil {
			return "", nil, err
		}
		next, err := peer("hand_off", m.HandOff)
		if err != nil {
			return "", nil, err
		}
		msg = coordinator.HandOff{Shard: s, Epoch: e, Next: next, NextEpoch: coordinator.Epoch(m.HandOff.PeerEpoch)}
	case *pb.CoordEnvelope_HandedOver:
		s, e, err := shardEpoch("handed_over", m.HandedOver)
		if err != nil {
			return "", nil, err
		}
		msg = coordinator.HandedOver{Shard: s, Epoch: e}
	case *pb.CoordEnvelope_RequestRegister:
		msg = coordinator.RequestRegister{}
	case nil:
		return "", nil, malformed("coordination frame carries no message")
	default:
		return "", nil, malformed("coordination frame carries an unknown message %T", m)
	}
	return env.EntityType, msg, nil
}
