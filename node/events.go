package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// Event is what subscribers receive: a membership event (membership.Event), an event of an
// entity type on this member (engine.TypedEvent), or a sharding event from any member
// (wire.ShardingEvent, this member's own included).
type Event any

// Subscribe returns a channel of events (buffered; a subscriber that falls behind loses
// events, never blocks the member) and a function to unsubscribe.
func (n *Node) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 1024)
	n.subsMu.Lock()
	n.subs[ch] = struct{}{}
	n.subsMu.Unlock()
	return ch, func() {
		n.subsMu.Lock()
		delete(n.subs, ch)
		n.subsMu.Unlock()
	}
}

// Publish tells local subscribers of an event (Env).
func (e *nodeEnv) Publish(ev Event) { (*Node)(e).publish(ev) }

func (n *Node) publish(ev Event) {
	n.subsMu.Lock()
	defer n.subsMu.Unlock()
	for ch := range n.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

func (c *Core) logEvent(ev membership.Event) {
	switch e := ev.(type) {
	case membership.MemberChanged:
		c.log.Info("member "+e.Member.Status.String(), "member", e.Member.Node, "incarnation", e.Member.Incarnation, "up_number", e.Member.UpNumber, "roles", e.Member.Roles, "app_version", e.Member.AppVersion)
	case membership.ReachabilityChanged:
		if e.Reachable {
			c.log.Info("member reachable again", "member", e.Node)
		} else {
			c.log.Warn("member unreachable", "member", e.Node)
		}
	case membership.LeaderChanged:
		c.log.Info("leader changed", "leader", e.Leader)
	case membership.Downed:
		c.log.Warn("split-brain resolver decision", "decision", e.Decision.String(), "downed", e.Nodes, "side", e.Side, "others", e.Others, "indirectly_connected", e.Indirect, "strategy", e.Strategy, "lease", e.Lease, "reason", e.Reason)
	case membership.Suspended:
		c.log.Warn("paused: serving nothing until a majority confirms this member")
	case membership.Resumed:
		c.log.Info("a majority confirmed this member; serving again")
	case membership.Formed:
		c.log.Info("forming a new cluster", "why", e.Why, "last_cluster_size", c.self.LastClusterSize)
	case membership.Stopped:
		level := slog.LevelError
		if e.Reason == membership.StopLeft {
			level = slog.LevelInfo
		}
		c.log.Log(context.Background(), level, "member stopped: "+e.Detail, "reason", e.Reason.String())
	}
}

func (c *Core) logTypedEvent(ev engine.TypedEvent) {
	log := c.log.With("type", ev.Type)
	switch e := ev.Event.(type) {
	case engine.CoordinatorStarted:
		log.Info("coordinator started here", "term", e.Term)
	case engine.CoordinatorStopped:
		log.Info("coordinator stopped here", "term", e.Term)
	case coordinator.Recovered:
		log.Info("coordinator recovered", "term", e.Term, "regions", e.Regions, "shards", e.Shards, "took", e.Took)
	case coordinator.RegionTerminated:
		log.Info("region terminated; its shards are free", "region", e.Region, "shards", len(e.Shards))
	case coordinator.HandoffStarted:
		log.Debug("handoff started", "shard", e.Shard, "from", e.From, "epoch", e.Epoch.String(), "cause", e.Cause)
	case coordinator.HandoffCompleted:
		log.Debug("handoff completed", "shard", e.Shard, "from", e.From, "epoch", e.Epoch.String(), "took", e.Took)
	case coordinator.HandoffFailed:
		log.Warn("handoff failed: the shard stays", "shard", e.Shard, "epoch", e.Epoch.String(), "phase", e.Phase.String(), "waiting_for", e.Waiting)
	case coordinator.RebalanceRound:
		log.Info("rebalancing", "shards", len(e.Shards))
	case engine.ShutdownComplete:
		log.Info("every shard handed off")
	}
}

// gossipEvent publishes a coordinator event on the sharding-events topic (and to local
// subscribers as a wire.ShardingEvent, as other members will see it).
func (c *Core) gossipEvent(ev engine.TypedEvent, now time.Time) {
	se, ok := shardingEvent(ev, now)
	if !ok {
		return
	}
	se.Origin = c.self.Node
	c.env.Publish(se)
	c.env.Gossip(wire.AppendEvent(nil, se))
}

// Gossip queues a sharding event for the sharding-events topic (Env); a full queue drops
// it (gossip is best effort: nothing depends on it).
func (e *nodeEnv) Gossip(frame []byte) {
	select {
	case e.eventsOut <- frame:
	default:
		e.log.Debug("sharding event not published: the queue is full")
	}
}

// publishEvents publishes queued sharding events, in order.
func (n *Node) publishEvents() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case frame := <-n.eventsOut:
			ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
			if err := n.events.Publish(ctx, frame); err != nil && n.ctx.Err() == nil {
				n.log.Debug("sharding event not published", "err", err)
			}
			cancel()
		}
	}
}

// receiveEvents takes other members' sharding events to the loop (Core.shardingEvent).
func (n *Node) receiveEvents() {
	defer n.wg.Done()
	for {
		m, err := n.eventsSub.Next(n.ctx)
		if err != nil {
			return
		}
		se, err := wire.DecodeEvent(m.Data)
		if err != nil {
			n.log.Debug("dropped a malformed sharding event", "peer", m.From, "err", err)
			continue
		}
		se.Origin = membership.NodeID(m.From.String())
		n.enqueue(ShardingEventIn{Event: se})
	}
}

// shardingEvent converts an engine event into a publishable one; ok is false for events
// that are not published.
func shardingEvent(ev engine.TypedEvent, at time.Time) (wire.ShardingEvent, bool) {
	out := wire.ShardingEvent{Type: ev.Type, At: at}
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
