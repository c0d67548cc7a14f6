package region

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Envelope is one message on its way to an entity.
type Envelope struct {
	Shard  shard.ID
	Entity shard.EntityID
	// Payload is the runtime's message (a Go value for a local sender, encoded bytes from a
	// remote one); the region never looks inside.
	Payload any
	// Hops counts forwards between regions; a message forwarded too often (homes that
	// disagree, briefly) is rejected rather than looping.
	Hops uint8
	// Epoch is the allocation epoch of the home the sending region forwarded it to (0: sent
	// on this member). A region that is no longer that home refuses it (*NotHomeError) and
	// the sender routes it again: the epoch is a fencing token on messages.
	Epoch coordinator.Epoch
}

// NotHomeError refuses a message forwarded to this member as the home of Shard with Epoch,
// when this member knows it is no longer the home: Home (with HomeEpoch) is the home it
// knows. The sending region drops its stale home and routes the message again (Region.NotHome).
type NotHomeError struct {
	Shard     shard.ID
	Epoch     coordinator.Epoch
	Home      membership.NodeID
	HomeEpoch coordinator.Epoch
}

func (e *NotHomeError) Error() string {
	return fmt.Sprintf("not the home of shard %s with epoch %s: %s is, with epoch %s", e.Shard, e.Epoch, e.Home, e.HomeEpoch)
}

// Unwrap makes errors.Is(err, ErrNotHome) hold.
func (e *NotHomeError) Unwrap() error { return ErrNotHome }

// MaxHops bounds how often a message is forwarded between regions.
const MaxHops = 8

// Rejection reasons.
var (
	ErrBufferFull   = errors.New("region buffer full")
	ErrTooManyHops  = errors.New("forwarded too many times: shard homes disagree")
	ErrShuttingDown = errors.New("region shutting down")
	ErrTypeStopped  = errors.New("entity type stopped by an operator (`shardctl types start TYPE` brings it back)")
	ErrNotHome      = errors.New("no longer the shard's home")
)

// Config configures a region.
type Config struct {
	// TypeName is the entity type's name.
	TypeName string
	// Role: members with this role host shards; others run proxies. "" for all.
	Role string
	// Proxy makes the region a proxy even on a member with the role (startProxy).
	Proxy bool
	// BufferSize bounds the messages buffered for shards without a known home, per region
	// (buffer-size). Default 100000.
	BufferSize int
	// RetryInterval is how often registration and home requests are repeated while
	// unanswered (retry-interval). Default 2 s.
	RetryInterval time.Duration
}

// DefaultConfig returns Akka's defaults.
func DefaultConfig(typeName string) Config {
	return Config{TypeName: typeName, BufferSize: 100000, RetryInterval: 2 * time.Second}
}

// Members is the membership as the region's member sees it.
type Members struct {
	Members     []membership.Member
	Unreachable map[membership.NodeID]bool
	// Serving reports whether this member may serve (its majority lease): a region that may
	// not serve delivers nothing to its local shards, it buffers.
	Serving bool
	// Coordinator is where the type's coordinator runs: the oldest Up member with the role
	// ("" when there is none).
	Coordinator membership.NodeID
}

// Output is something the region wants done. The set is sealed.
type Output interface{ isOutput() }

// Outputs.
type (
	// ToCoordinator sends a coordinator protocol message to the member running the
	// coordinator.
	ToCoordinator struct {
		To  membership.NodeID
		Msg coordinator.Message
	}
	// Forward sends an envelope to another member's region.
	Forward struct {
		To       membership.NodeID
		Envelope Envelope
	}
	// StartShard starts hosting a shard locally.
	StartShard struct {
		Shard shard.ID
		Epoch coordinator.Epoch
	}
	// DeliverLocal hands an envelope to a local shard (started before).
	DeliverLocal struct{ Envelope Envelope }
	// StopShard asks a local shard to stop all its entities (handoff); the runtime reports
	// back with ShardStopped.
	StopShard struct {
		Shard shard.ID
		Epoch coordinator.Epoch
	}
	// Rejected returns an envelope the region could not keep, with the reason.
	Rejected struct {
		Envelope Envelope
		Err      error
	}
	// ShutdownComplete reports that every local shard is handed off; the member can leave.
	ShutdownComplete struct{}
)

func (ToCoordinator) isOutput()    {}
func (Forward) isOutput()          {}
func (StartShard) isOutput()       {}
func (DeliverLocal) isOutput()     {}
func (StopShard) isOutput()        {}
func (Rejected) isOutput()         {}
func (ShutdownComplete) isOutput() {}
