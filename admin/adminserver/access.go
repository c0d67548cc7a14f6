package adminserver

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// access is what a call may do, and so who may make it.
type access uint8

const (
	// accessRead calls only read: members, types, region-state, stats, locate, health,
	// watch. Answered to admins and to the cluster's members always, and to any peer that
	// reaches the member (it holds the cluster key and passes the allow-list) when
	// admin-read-only-open is on (the default).
	accessRead access = iota
	// accessMessage calls send messages to entities (tell, ask, bench): the data plane,
	// what the cluster's own application code does. Who may make them: as accessRead.
	accessMessage
	// accessAdmin calls change the cluster (shutdown, leave, down, drain, shard moves and pins,
	// rebalance pause/resume, types stop/start, data remove): admin identities only.
	accessAdmin
)

// callInfo names a request's call (for logs and refusals) and its access.
func callInfo(req *adminpb.Request) (string, access) {
	switch c := req.Call.(type) {
	case *adminpb.Request_Members:
		return "members", accessRead
	case *adminpb.Request_Types:
		return "types", accessRead
	case *adminpb.Request_RegionState:
		return "region-state", accessRead
	case *adminpb.Request_Stats:
		return "stats", accessRead
	case *adminpb.Request_LocalStats:
		return "local-stats", accessRead
	case *adminpb.Request_Locate:
		return "locate", accessRead
	case *adminpb.Request_ShardInfo:
		return "shard-info", accessRead
	case *adminpb.Request_Health:
		return "health", accessRead
	case *adminpb.Request_Watch:
		return "watch", accessRead
	case *adminpb.Request_Tell:
		return "tell", accessMessage
	case *adminpb.Request_Ask:
		return "ask", accessMessage
	case *adminpb.Request_Shutdown:
		if c.Shutdown.Follow {
			return "shutdown", accessAdmin
		}
		return "leave", accessAdmin
	case *adminpb.Request_Down:
		return "down", accessAdmin
	case *adminpb.Request_Directives:
		return "directives", accessRead
	case *adminpb.Request_Plan:
		return "rebalance-plan", accessRead
	case *adminpb.Request_Handoffs:
		return "handoffs", accessRead
	case *adminpb.Request_LocalHandoffs:
		return "local-handoffs", accessRead
	case *adminpb.Request_History:
		return "history", accessRead
	case *adminpb.Request_Reminders:
		return "reminders", accessRead
	case *adminpb.Request_Directive:
		return directiveCallName(c.Directive), accessAdmin
	case *adminpb.Request_DataRemove:
		return "data-remove", accessAdmin
	}
	return "unknown", accessAdmin
}

// authorize returns the refusal of a call from caller, or nil when it may proceed. Every
// refusal is logged with the caller's peer id.
func (s *Server) authorize(caller peer.ID, req *adminpb.Request) *adminpb.Response {
	name, acc := callInfo(req)
	if s.admins[caller] || caller == s.self {
		return nil
	}
	var reason string
	switch acc {
	case accessAdmin:
		if len(s.admins) == 0 {
			reason = name + " changes the cluster and needs an admin identity, and this member allows none: start it with --admin-allow PEER_ID (shardctl keygen admin makes an identity and prints its peer id)"
		} else {
			reason = name + " changes the cluster and needs an admin identity: caller " + caller.String() + " is not in this member's --admin-allow (pass an allowed identity with shardctl --identity FILE)"
		}
	default:
		if s.cfg.ReadOnlyOpen || s.isMember(caller) {
			return nil
		}
		reason = name + " needs an admin identity here (admin-read-only-open is off): caller " + caller.String() + " is neither in --admin-allow nor a member"
	}
	s.log.Warn("admin call refused", "call", name, "caller", caller.String(), "reason", reason)
	return refuse(adminpb.Code_REFUSED, "refused: %s", reason)
}

// isMember reports whether caller is a current member of the cluster (members query each
// other's regions for stats and locate).
func (s *Server) isMember(caller peer.ID) bool {
	id := caller.String()
	for _, m := range s.backend.Members().GetMembers() {
		if m.Node == id && m.Status != "Down" && m.Status != "Removed" {
			return true
		}
	}
	return false
}
