package adminserver

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/wire"
)

// keepaliveInterval is how often a quiet stream sends an empty response, so a caller that
// went away is noticed.
const keepaliveInterval = 5 * time.Second

// watch streams sharding events (of every member, as gossiped) and member events (as this
// member sees them) until the caller closes the stream or the member stops. The first
// response is empty: the subscription is live once it arrives. A watcher that falls more
// than the member's event buffer behind loses events.
func (s *Server) watch(ctx context.Context, req *adminpb.WatchRequest, emit emitter) error {
	events, stop := s.backend.Subscribe()
	defer stop()
	if err := emit(&adminpb.Response{More: true}); err != nil {
		return err
	}
	keepalive := time.NewTicker(keepaliveInterval)
	defer keepalive.Stop()
	for {
		select {
		case ev := <-events:
			we, ok := watchEvent(s.backend.Self(), ev, time.Now())
			if !ok || (we.EntityType == "" && req.NoMembers) || (we.EntityType != "" && len(req.EntityTypes) > 0 && !slices.Contains(req.EntityTypes, we.EntityType)) {
				continue
			}
			if err := emit(&adminpb.Response{More: true, Result: &adminpb.Response_Event{Event: we}}); err != nil {
				return err
			}
		case <-keepalive.C:
			if err := emit(&adminpb.Response{More: true}); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		case <-s.backend.Done():
			return emit(refuse(adminpb.Code_FAILED, "the member stopped (%s): watch through another member", orUnknown(s.backend.StopReason())))
		case <-s.quit:
			return emit(refuse(adminpb.Code_FAILED, "the member is shutting down: watch through another member"))
		}
	}
}

// watchEvent converts a member's event for watchers; false for events watchers do not see
// (the member's own typed events, which come again as sharding events).
func watchEvent(self string, ev node.Event, now time.Time) (*adminpb.WatchEvent, bool) {
	we := &adminpb.WatchEvent{AtUnixMs: now.UnixMilli()}
	switch e := ev.(type) {
	case wire.ShardingEvent:
		we.Kind = kebab(e.Kind.String())
		we.AtUnixMs = e.At.UnixMilli()
		we.EntityType, we.Shard, we.From, we.To = e.Type, string(e.Shard), string(e.From), string(e.To)
		we.Epoch, we.TookMs, we.Cause, we.Phase, we.Term = uint64(e.Epoch), uint64(e.Took.Milliseconds()), e.Cause, e.Phase, e.Term
		we.Origin = string(e.Origin)
		we.Entity, we.Entities = string(e.Entity), wire.Count32(e.Entities)
		for _, sh := range e.Shards {
			we.Shards = append(we.Shards, string(sh))
		}
	case membership.MemberChanged:
		we.Kind = "member-" + strings.ToLower(e.Member.Status.String())
		we.Member, we.Status = string(e.Member.Node), e.Member.Status.String()
		if !e.New {
			we.Previous = e.Previous.String()
		}
	case membership.ReachabilityChanged:
		we.Kind, we.Member = "member-unreachable", string(e.Node)
		if e.Reachable {
			we.Kind = "member-reachable"
		}
	case membership.LeaderChanged:
		we.Kind, we.Member = "leader-changed", string(e.Leader)
	case membership.Downed:
		we.Kind, we.Member, we.Detail = "resolver-downed", self, e.Reason
		for _, n := range e.Nodes {
			we.Shards = append(we.Shards, string(n)) // the members downed
		}
	case membership.Suspended:
		we.Kind, we.Member, we.Detail = "member-suspended", self, "paused: serving nothing until a majority confirms this member"
	case membership.Resumed:
		we.Kind, we.Member = "member-resumed", self
	case membership.Stopped:
		we.Kind, we.Member, we.Detail = "member-stopped", self, e.Reason.String()+": "+e.Detail
	default:
		return nil, false
	}
	return we, true
}

// kebab turns SHARD_ALLOCATED into shard-allocated.
func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "-")) }

func orUnknown(s string) string {
	if s == "" {
		return "closed"
	}
	return s
}
