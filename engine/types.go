package engine

import (
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// TypeConfig configures one entity type.
type TypeConfig struct {
	Name        string
	Coordinator coordinator.Config
	Region      region.Config
	Shard       shard.Config
	// Passivation is the type's automatic passivation (the zero value: none).
	Passivation passivation.Settings
}

// Config configures an engine.
type Config struct {
	Membership membership.Config
	Types      []TypeConfig
	// ShutdownTimeout bounds the graceful handoff before leaving; the member leaves anyway
	// when it expires. Default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// AwaitDirectives: coordinators serve nothing until SetDirectives was called once (the
	// operator's directives live in the replicated store; see coordinator.Config).
	AwaitDirectives bool
	// DurableTerms: coordinators serve nothing until SetCoordinatorTerm gives them a term
	// from the replicated store (see coordinator.Config.DurableTerm).
	DurableTerms bool
	// DurableShards: every type's coordinator starts the shards marked in the store
	// (reminders) without waiting for a message (see coordinator.Config.DurableShards).
	DurableShards bool
}

// DefaultShutdownTimeout is the default Config.ShutdownTimeout: reference.conf's
// handoff-timeout, the time a graceful handoff of every shard may take.
const DefaultShutdownTimeout = 60 * time.Second

// Coordination is a coordinator protocol message for the region or the coordinator of an
// entity type on another member.
type Coordination struct {
	To   membership.NodeID
	Type string
	Msg  coordinator.Message
}

// Forward is a message for an entity, sent to its shard's home on another member.
type Forward struct {
	To       membership.NodeID
	Type     string
	Envelope region.Envelope
}

// EntityOpKind says what to do with an entity.
type EntityOpKind uint8

// Entity operations.
const (
	OpStart     EntityOpKind = iota // create a new incarnation
	OpDeliver                       // enqueue Envelope in its mailbox
	OpStop                          // enqueue its stop message (after what is queued)
	OpForceStop                     // stop it now; report what was queued with EntityStopped
)

func (k EntityOpKind) String() string {
	return [...]string{"start", "deliver", "stop", "force-stop"}[k]
}

// EntityOp is work for the entity runtime.
type EntityOp struct {
	Kind     EntityOpKind
	Type     string
	Shard    shard.ID
	Entity   shard.EntityID
	Envelope region.Envelope // for OpDeliver
	// Slot is the runtime's own data for the incarnation (OpStart and OpDeliver): what it
	// stores at OpStart comes back with every OpDeliver of the incarnation.
	Slot *shard.Slot
	// Epoch is the shard's allocation epoch (OpStart): the incarnation's fencing token.
	Epoch coordinator.Epoch
}

// Rejected is a message the member could not keep; its sender should be told.
type Rejected struct {
	Type     string
	Envelope region.Envelope
	Err      error
}

// TypedEvent is an event of an entity type's coordinator or region.
type TypedEvent struct {
	Type  string
	Event any // a coordinator.Event, or one of the engine's region events
}

// Region events, reported as TypedEvent.Event.
type (
	// ShardStarted reports that a shard started hosting here.
	ShardStarted struct {
		Shard shard.ID
		Epoch coordinator.Epoch
	}
	// ShardHandedOff reports that a shard stopped here after a handoff.
	ShardHandedOff struct{ Shard shard.ID }
	// CoordinatorStarted reports that this member now runs the type's coordinator.
	CoordinatorStarted struct{ Term uint64 }
	// CoordinatorStopped reports that this member no longer runs it.
	CoordinatorStopped struct{ Term uint64 }
	// ShutdownComplete reports that graceful shutdown handed off every shard of the type.
	ShutdownComplete struct{}
	// EntityForceStopped reports that a handoff stopped an entity by force: it had not
	// stopped on its stop message within the handoff timeout.
	EntityForceStopped struct {
		Shard  shard.ID
		Entity shard.EntityID
	}
)
