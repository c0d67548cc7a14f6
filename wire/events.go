package wire

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// ShardingEvent is an event of an entity type's coordinator, as published on the cluster's
// sharding-events topic.
type ShardingEvent struct {
	Type     string
	Kind     pb.ShardingEvent_Kind
	Shard    shard.ID
	From, To membership.NodeID
	Epoch    coordinator.Epoch
	Took     time.Duration
	Cause    string
	Phase    string
	Shards   []shard.ID
	Term     uint64
	At       time.Time
	Entity   shard.EntityID // ENTITY_FORCE_STOPPED
	Entities int            // incarnations a handoff stopped
	// Origin is the member that published it (set by the receiver from the gossip origin).
	Origin membership.NodeID
}

// EventFrom converts an engine event into a publishable one; ok is false for events that are
// not published.
func EventFrom(ev engine.TypedEvent, at time.Time) (ShardingEvent, bool) {
	out := ShardingEvent{Type: ev.Type, At: at}
	switch e := ev.Event.(type) {
	case engine.CoordinatorStarted:
		out.Kind, out.Term = pb.ShardingEvent_COORDINATOR_STARTED, e.Term
	case coordinator.Recovered:
		out.Kind, out.Term, out.Took = pb.ShardingEvent_COORDINATOR_RECOVERED, e.Term, e.Took
	case coordinator.RegionRegistered:
		out.Kind, out.To = pb.ShardingEvent_REGION_REGISTERED, e.Region
	case coordinator.RegionTerminated:
		out.Kind, out.To, out.Shards = pb.ShardingEvent_REGION_TERMINATED, e.Region, e.Shards
	case coordinator.ShardAllocated:
		out.Kind, out.Shard, out.To, out.Epoch = pb.ShardingEvent_SHARD_ALLOCATED, e.Shard, e.Region, e.Epoch
		out.From, out.Cause, out.Took, out.Entities = e.From, string(e.Cause), e.Took, e.Entities
	case coordinator.HandoffStarted:
		out.Kind, out.Shard, out.From, out.Epoch, out.Cause = pb.ShardingEvent_HANDOFF_STARTED, e.Shard, e.From, e.Epoch, string(e.Cause)
	case coordinator.HandoffPhase:
		out.Kind, out.Shard, out.Epoch, out.Phase = pb.ShardingEvent_HANDOFF_PHASE, e.Shard, e.Epoch, e.Phase.String()
	case coordinator.HandoffCompleted:
		out.Kind, out.Shard, out.From, out.Epoch, out.Took = pb.ShardingEvent_HANDOFF_COMPLETED, e.Shard, e.From, e.Epoch, e.Took
		out.Entities = e.Entities
	case engine.EntityForceStopped:
		out.Kind, out.Shard, out.Entity = pb.ShardingEvent_ENTITY_FORCE_STOPPED, e.Shard, e.Entity
	case coordinator.HandoffFailed:
		out.Kind, out.Shard, out.Epoch, out.Phase = pb.ShardingEvent_HANDOFF_FAILED, e.Shard, e.Epoch, e.Phase.String()
	case coordinator.RebalanceRound:
		out.Kind, out.Shards = pb.ShardingEvent_REBALANCE_ROUND, e.Shards
	default:
		return out, false
	}
	return out, true
}

// AppendEvent appends the frame of e.
func AppendEvent(dst []byte, e ShardingEvent) []byte {
	m := &pb.ShardingEvent{ProtocolVersion: ProtocolVersion, EntityType: e.Type, Kind: e.Kind, Shard: string(e.Shard),
		From: string(e.From), To: string(e.To), Epoch: uint64(e.Epoch), DurationMs: uint64(e.Took.Milliseconds()),
		Cause: e.Cause, Phase: e.Phase, Term: e.Term, AtUnixMs: e.At.UnixMilli(), Entity: string(e.Entity),
		Entities: Count32(e.Entities)}
	for _, s := range e.Shards {
		m.Shards = append(m.Shards, string(s))
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		panic(fmt.Sprintf("wire: marshal sharding event: %v", err))
	}
	return out
}

// DecodeEvent decodes and validates a sharding event frame.
func DecodeEvent(frame []byte) (ShardingEvent, error) {
	var m pb.ShardingEvent
	if err := proto.Unmarshal(frame, &m); err != nil {
		return ShardingEvent{}, malformed("sharding event: %v", err)
	}
	if err := checkVersion("sharding events", m.ProtocolVersion); err != nil {
		return ShardingEvent{}, err
	}
	if m.Kind != pb.ShardingEvent_DIRECTIVE_CHANGED || m.EntityType != "" { // directives may be cluster-wide
		if err := checkID("entity_type", m.EntityType); err != nil {
			return ShardingEvent{}, err
		}
	}
	if len(m.Entity) > maxIDLen || len(m.Cause) > maxStringLen || len(m.Phase) > maxStringLen {
		return ShardingEvent{}, malformed("sharding event: entity, cause or phase too long")
	}
	if _, ok := pb.ShardingEvent_Kind_name[int32(m.Kind)]; !ok || m.Kind == pb.ShardingEvent_UNKNOWN {
		return ShardingEvent{}, malformed("sharding event kind %d", m.Kind)
	}
	if err := checkStrings("shards", m.Shards, maxMembers); err != nil {
		return ShardingEvent{}, err
	}
	e := ShardingEvent{Type: m.EntityType, Kind: m.Kind, Shard: shard.ID(m.Shard), From: membership.NodeID(m.From), To: membership.NodeID(m.To),
		Epoch: coordinator.Epoch(m.Epoch), Took: time.Duration(m.DurationMs) * time.Millisecond, Cause: m.Cause, Phase: m.Phase,
		Term: m.Term, At: time.UnixMilli(m.AtUnixMs), Entity: shard.EntityID(m.Entity), Entities: int(m.Entities)}
	for _, s := range m.Shards {
		e.Shards = append(e.Shards, shard.ID(s))
	}
	return e, nil
}
