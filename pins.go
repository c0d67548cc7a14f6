package shardmesh

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
)

// External shard allocation from Go: what `shardctl shard move|pin|unpin` does, for a
// program (Akka's ExternalShardAllocationClient). A pin is stored in the replicated store
// (acknowledged by a write quorum, so it survives a coordinator failover and a full-cluster
// restart) and the type's coordinator applies it: a pinned shard is handed off to its member
// (its messages are buffered meanwhile; none is lost), is allocated there whenever that
// member can take it, and is never moved away by rebalancing. With
// `sharding.allocation-strategy = external` pins are the only thing that moves shards;
// with the other strategies they override the strategy for the shards they name.

// maxShardIDLen bounds a shard id given to PinShard and UnpinShard, as the admin protocol
// does.
const maxShardIDLen = 256

// PinShard pins shard shardID of entity type typeName to member, which must be Up and have
// the type's role. It returns once the pin is stored; the shard then moves in the background
// if it lives elsewhere (watch the sharding events, or `shardctl locate`). Pinning a pinned
// shard again replaces its pin. The type must be registered on this member (Init).
func (s *System) PinShard(ctx context.Context, typeName, shardID string, member membership.NodeID) error {
	role, err := s.checkPin("pin", typeName, shardID)
	if err != nil {
		return err
	}
	v := s.node.View()
	var m *membership.Member
	for i := range v.Members {
		if v.Members[i].Node == member {
			m = &v.Members[i]
		}
	}
	switch {
	case member == "":
		return fmt.Errorf("pin %s/%s: no member named", typeName, shardID)
	case m == nil:
		return fmt.Errorf("pin %s/%s: %q is not a member of the cluster", typeName, shardID, member)
	case m.Status != membership.Up:
		return fmt.Errorf("pin %s/%s: member %s is %s: a shard can be pinned only to an Up member", typeName, shardID, member, m.Status)
	case !m.HasRole(role):
		return fmt.Errorf("pin %s/%s: member %s does not have role %q, which hosts %s (its roles: %v)", typeName, shardID, member, role, typeName, m.Roles)
	}
	return s.node.ChangeDirective(ctx, node.DirectiveChange{Kind: "pin", Node: member, Type: typeName, Shard: shard.ID(shardID)})
}

// UnpinShard removes the pin of shard shardID of entity type typeName, if it has one. The
// shard stays where it is; from now on the allocation strategy decides where it goes (with
// the external strategy it then never moves). The type must be registered on this member.
func (s *System) UnpinShard(ctx context.Context, typeName, shardID string) error {
	if _, err := s.checkPin("unpin", typeName, shardID); err != nil {
		return err
	}
	return s.node.ChangeDirective(ctx, node.DirectiveChange{Kind: "pin", Type: typeName, Shard: shard.ID(shardID), Undo: true})
}

// directivesPoll is how often ShardPins looks again for the directives' first read.
const directivesPoll = 20 * time.Millisecond

// ShardPins returns the pinned shards of entity type typeName and their members, as this
// member last read them from the replicated store (at once after its own PinShard and
// UnpinShard; within a few seconds after a change made elsewhere). It fails before the
// directives were read once, shortly after Start: until then it waits, and fails when ctx
// ends first.
func (s *System) ShardPins(ctx context.Context, typeName string) (map[string]membership.NodeID, error) {
	d, ok, err := s.node.Directives(ctx)
	for err == nil && !ok {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("shard pins of %s: the operator's directives have not been read from the store yet: %w", typeName, ctx.Err())
		case <-time.After(directivesPoll):
		}
		d, ok, err = s.node.Directives(ctx)
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]membership.NodeID, len(d.Pins[typeName]))
	for id, m := range maps.All(d.Pins[typeName]) {
		out[string(id)] = m
	}
	return out, nil
}

// checkPin validates the type and shard of a pin or an unpin (op) and returns the type's
// role. A type registered on the node directly, not through Init, has no role check.
func (s *System) checkPin(op, typeName, shardID string) (string, error) {
	role, ok := s.roles.Load(typeName)
	if !ok && !slices.Contains(s.node.TypeNames(), typeName) {
		return "", fmt.Errorf("%s %s/%s: unknown entity type %q (this member registered %v)", op, typeName, shardID, typeName, s.node.TypeNames())
	}
	if shardID == "" || len(shardID) > maxShardIDLen {
		return "", fmt.Errorf("%s %s/%s: shard id %q must be 1 to %d bytes", op, typeName, shardID, shardID, maxShardIDLen)
	}
	r, _ := role.(string)
	return r, nil
}
