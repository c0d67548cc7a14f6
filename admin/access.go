package admin

import "github.com/shardmesh/shardmesh/admin/adminpb"

// Access is what a call may do, and so who may make it.
type Access uint8

const (
	// AccessRead calls only read: members, types, region-state, stats, locate, health,
	// watch, handoffs, history, audit, reminders, rebalance plan. Answered to admins and to the
	// cluster's members always, and to any peer that reaches the member (it holds the
	// cluster key and passes the allow-list) when admin-read-only-open is on (the default).
	AccessRead Access = iota
	// AccessMessage calls send messages to entities (tell, ask, bench): the data plane,
	// what the cluster's own application code does. Who may make them: as AccessRead.
	AccessMessage
	// AccessAdmin calls change the cluster (shutdown, leave, down, drain, shard moves and
	// pins, rebalance pause/resume, types stop/start, data remove): only requests signed by
	// an admin of the member that carries them out (package trust).
	AccessAdmin
)

// Directive kinds of DirectiveRequest, and the names of the calls that set and undo them.
var directiveNames = map[string][2]string{
	"drain": {"drain", "undrain"},
	"pause": {"rebalance-pause", "rebalance-resume"},
	"pin":   {"shard-pin", "shard-unpin"},
	"stop":  {"types-stop", "types-start"},
}

// IsDirectiveKind reports whether kind is a directive kind (drain, pause, pin, stop).
func IsDirectiveKind(kind string) bool {
	_, ok := directiveNames[kind]
	return ok
}

// DirectiveCallName names the call that makes directive change d ("drain", "types-start", …).
func DirectiveCallName(d *adminpb.DirectiveRequest) string {
	names, ok := directiveNames[d.GetKind()]
	if !ok {
		return "directive"
	}
	if d.GetUndo() {
		return names[1]
	}
	return names[0]
}

// CallInfo names a request's call (for logs, refusals and the audit) and says its access.
func CallInfo(req *adminpb.Request) (string, Access) {
	switch c := req.Call.(type) {
	case nil:
		return "none", AccessRead // refused as malformed
	case *adminpb.Request_Members:
		return "members", AccessRead
	case *adminpb.Request_Types:
		return "types", AccessRead
	case *adminpb.Request_RegionState:
		return "region-state", AccessRead
	case *adminpb.Request_Stats:
		return "stats", AccessRead
	case *adminpb.Request_LocalStats:
		return "local-stats", AccessRead
	case *adminpb.Request_Locate:
		return "locate", AccessRead
	case *adminpb.Request_ShardInfo:
		return "shard-info", AccessRead
	case *adminpb.Request_Health:
		return "health", AccessRead
	case *adminpb.Request_Watch:
		return "watch", AccessRead
	case *adminpb.Request_Tell:
		return "tell", AccessMessage
	case *adminpb.Request_Ask:
		return "ask", AccessMessage
	case *adminpb.Request_Shutdown:
		if c.Shutdown.Follow {
			return "shutdown", AccessAdmin
		}
		return "leave", AccessAdmin
	case *adminpb.Request_Down:
		return "down", AccessAdmin
	case *adminpb.Request_Directives:
		return "directives", AccessRead
	case *adminpb.Request_Plan:
		return "rebalance-plan", AccessRead
	case *adminpb.Request_Handoffs:
		return "handoffs", AccessRead
	case *adminpb.Request_LocalHandoffs:
		return "local-handoffs", AccessRead
	case *adminpb.Request_History:
		return "history", AccessRead
	case *adminpb.Request_Reminders:
		return "reminders", AccessRead
	case *adminpb.Request_StoreStatus:
		return "store-status", AccessRead
	case *adminpb.Request_LocalStoreStatus:
		return "local-store-status", AccessRead
	case *adminpb.Request_Directive:
		return DirectiveCallName(c.Directive), AccessAdmin
	case *adminpb.Request_DataRemove:
		return "data-remove", AccessAdmin
	case *adminpb.Request_DataRemoveCheck:
		return "data-remove-check", AccessRead // changes nothing; the signature inside is checked
	case *adminpb.Request_Audit:
		return "audit", AccessRead
	}
	return "unknown", AccessAdmin
}
