package admin

import (
	"fmt"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/wire"
)

// Limits of what a request may name, as the member-to-member protocols accept them: an id
// the admin server took would otherwise fail later, on another member.
const (
	maxTypeLen   = 256  // entity type names
	maxShardLen  = 256  // shard ids
	maxEntityLen = 1024 // entity ids
	maxTypes     = 64   // entity types named in one request
)

// DecodeRequest decodes a request frame and checks its protocol version and the ids it
// names (Validate); the error says what is wrong, for the BAD_REQUEST answer.
func DecodeRequest(frame []byte) (*adminpb.Request, error) {
	var req adminpb.Request
	if err := proto.Unmarshal(frame, &req); err != nil {
		return nil, fmt.Errorf("malformed admin request: %w", err)
	}
	if req.ProtocolVersion != wire.ProtocolVersion {
		return nil, fmt.Errorf("admin protocol version %d is not supported (this member speaks %d)", req.ProtocolVersion, wire.ProtocolVersion)
	}
	if err := Validate(&req); err != nil {
		return nil, err
	}
	return &req, nil
}

// Validate checks the ids a request names, as members accept them: a client may check
// before it calls, and the server refuses what fails.
func Validate(req *adminpb.Request) error {
	if len(req.Signed) > 0 {
		if req.Call != nil {
			return fmt.Errorf("a signed request with a call beside it")
		}
		return nil // the call is inside; DecodeSignedBody checks it
	}
	switch call := req.Call.(type) {
	case nil:
		return fmt.Errorf("admin request without a call: is shardctl newer than this member?")
	case *adminpb.Request_Tell:
		return checkEntity(call.Tell.EntityType, call.Tell.Entity)
	case *adminpb.Request_Ask:
		return checkEntity(call.Ask.EntityType, call.Ask.Entity)
	case *adminpb.Request_RegionState:
		return checkType(call.RegionState.EntityType)
	case *adminpb.Request_Stats:
		return checkTypes(call.Stats.EntityTypes)
	case *adminpb.Request_LocalStats:
		return checkTypes(call.LocalStats.EntityTypes)
	case *adminpb.Request_Watch:
		return checkTypes(call.Watch.EntityTypes)
	case *adminpb.Request_Locate:
		return checkEntity(call.Locate.EntityType, call.Locate.Entity)
	case *adminpb.Request_ShardInfo:
		s := call.ShardInfo
		if err := checkType(s.EntityType); err != nil {
			return err
		}
		if err := checkID("shard id", s.Shard, maxShardLen); err != nil {
			return err
		}
		if s.Entity != "" {
			return checkID("entity id", s.Entity, maxEntityLen)
		}
	case *adminpb.Request_Down:
		return checkNode(call.Down.Node)
	case *adminpb.Request_Directive:
		return checkDirective(call.Directive)
	case *adminpb.Request_Plan:
		if err := checkType(call.Plan.EntityType); err != nil {
			return err
		}
		if call.Plan.IfLeave != "" {
			return checkNode(call.Plan.IfLeave)
		}
	case *adminpb.Request_DataRemove:
		r := call.DataRemove
		if r.Shard != "" {
			if err := checkID("shard id", r.Shard, maxShardLen); err != nil {
				return err
			}
		}
		if r.Entity != "" {
			if err := checkID("entity id", r.Entity, maxEntityLen); err != nil {
				return err
			}
		}
		return checkTypes(r.EntityTypes)
	case *adminpb.Request_Reminders:
		if call.Reminders.Entity != "" {
			return checkEntity(call.Reminders.EntityType, call.Reminders.Entity)
		}
		return checkType(call.Reminders.EntityType)
	case *adminpb.Request_DataRemoveCheck:
		if len(call.DataRemoveCheck.Signed) == 0 {
			return fmt.Errorf("data remove check without the signed request")
		}
	case *adminpb.Request_Handoffs:
		return checkTypes(call.Handoffs.EntityTypes)
	case *adminpb.Request_LocalHandoffs:
		return checkTypes(call.LocalHandoffs.EntityTypes)
	case *adminpb.Request_History:
		if call.History.Shard != "" {
			if err := checkID("shard id", call.History.Shard, maxShardLen); err != nil {
				return err
			}
		}
		return checkTypes(call.History.EntityTypes)
	case *adminpb.Request_StoreStatus:
		return checkTypes(call.StoreStatus.EntityTypes)
	case *adminpb.Request_LocalStoreStatus:
		return checkTypes(call.LocalStoreStatus.EntityTypes)
	}
	return nil
}

func checkDirective(d *adminpb.DirectiveRequest) error {
	if d.EntityType != "" {
		if err := checkType(d.EntityType); err != nil {
			return err
		}
	}
	if d.Shard != "" {
		if err := checkID("shard id", d.Shard, maxShardLen); err != nil {
			return err
		}
	}
	if d.Node != "" {
		return checkNode(d.Node)
	}
	return nil
}

func checkEntity(typ, entity string) error {
	if err := checkType(typ); err != nil {
		return err
	}
	return checkID("entity id", entity, maxEntityLen)
}

func checkType(typ string) error { return checkID("entity type", typ, maxTypeLen) }

func checkTypes(types []string) error {
	if len(types) > maxTypes {
		return fmt.Errorf("%d entity types named (at most %d)", len(types), maxTypes)
	}
	for _, t := range types {
		if err := checkType(t); err != nil {
			return err
		}
	}
	return nil
}

// checkID rejects an empty, overlong or non-UTF-8 id (ids hash as Java strings, over
// UTF-16 code units, so they must be text).
func checkID(what, id string, maxLen int) error {
	switch {
	case id == "":
		return fmt.Errorf("%s is empty", what)
	case len(id) > maxLen:
		return fmt.Errorf("%s is %d bytes long (at most %d)", what, len(id), maxLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%s %q is not valid UTF-8", what, id)
	}
	return nil
}

// checkNode rejects what is not a peer id.
func checkNode(node string) error {
	if node == "" {
		return fmt.Errorf("member id is empty")
	}
	if _, err := peer.Decode(node); err != nil {
		return fmt.Errorf("%q is not a member id (a peer id such as 12D3KooW…, as shardctl members --json lists them)", truncate(node, 80))
	}
	return nil
}

// CheckEntityID reports whether id is an entity id members accept, for clients that check
// before they call.
func CheckEntityID(id string) error { return checkID("entity id", id, maxEntityLen) }

// CheckTypeName reports whether name is an entity type name members accept.
func CheckTypeName(name string) error { return checkType(name) }

// CheckShardID reports whether id is a shard id members accept.
func CheckShardID(id string) error { return checkID("shard id", id, maxShardLen) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
