package wire

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/coordinator"
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
	// Incarnation is the origin's incarnation that departs (STORE_DEPARTING): a member
	// that left and joined again as a new incarnation departs no more. 0: not said.
	Incarnation uint64
	// Origin is the member that published it (set by the receiver from the gossip origin).
	Origin membership.NodeID
}

// AppendEvent appends the frame of e.
func AppendEvent(dst []byte, e ShardingEvent) []byte {
	m := &pb.ShardingEvent{ProtocolVersion: ProtocolVersion, EntityType: e.Type, Kind: e.Kind, Shard: string(e.Shard),
		From: string(e.From), To: string(e.To), Epoch: uint64(e.Epoch), DurationMs: uint64(e.Took.Milliseconds()),
		Cause: e.Cause, Phase: e.Phase, Term: e.Term, AtUnixMs: e.At.UnixMilli(), Entity: string(e.Entity),
		Entities: Count32(e.Entities), Incarnation: e.Incarnation}
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
	clusterWide := m.Kind == pb.ShardingEvent_DIRECTIVE_CHANGED || m.Kind == pb.ShardingEvent_STORE_DEPARTING
	if !clusterWide || m.EntityType != "" { // directives and departures may be cluster-wide
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
		Term: m.Term, At: time.UnixMilli(m.AtUnixMs), Entity: shard.EntityID(m.Entity), Entities: int(m.Entities),
		Incarnation: m.Incarnation}
	for _, s := range m.Shards {
		e.Shards = append(e.Shards, shard.ID(s))
	}
	return e, nil
}
