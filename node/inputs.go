package node

import (
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire"
)

// Input is one thing for a Core to take in (Core.Step): the sealed set below. Node's loop
// goroutine feeds them from the network, the entity workers, the store and the API; the
// simulation feeds them from its event queue.
type Input interface{ isInput() }

// The inputs. Deliver is the common case and is passed by value; the others are rare.
type (
	// Deliver is a message for an entity: sent on this member (Tell, Ask) or forwarded here
	// by another member's region.
	Deliver struct {
		Type     string
		Envelope region.Envelope // Payload is a *Message (a bounce, when its ext says so)
		// From is the member that forwarded it (the region protocol); "" for a message sent
		// on this member.
		From membership.NodeID
	}
	// MemberMessage is a membership protocol message from another member.
	MemberMessage struct {
		From membership.NodeID
		Msg  membership.Message
	}
	// CoordMessage is a coordinator protocol message from another member's coordinator or
	// region (or a shard home learned from a sharding event).
	CoordMessage struct {
		From membership.NodeID
		Type string
		Msg  coordinator.Message
	}
	// ShardingEventIn is a sharding event another member published.
	ShardingEventIn struct{ Event wire.ShardingEvent }
	// StoreDone answers a store request the core made (Env.Store).
	StoreDone struct {
		ID     uint64
		Result StoreResult
	}
	// LeaseAcquired answers a lease acquisition (Env.Lease).
	LeaseAcquired struct {
		Op engine.LeaseOp
		OK bool
	}
	// LeaseLost reports a held lease lost.
	LeaseLost struct{ Op engine.LeaseOp }
	// ResolverLeaseResult answers acquisition Seq of the split-brain resolver's lease
	// (Env.ResolverLease): Held reports whether this member holds it now.
	ResolverLeaseResult struct {
		Seq  uint64
		Held bool
	}
	// EntityStopped reports an incarnation that ended (it stopped, failed, or was stopped
	// by force), with the messages it had not handled.
	EntityStopped struct {
		Type      string
		Shard     shard.ID
		Entity    shard.EntityID
		Inc       Incarnation
		Remaining []*Message
	}
	// Passivate is an entity asking to be stopped (EntityContext.Passivate): Inc, not a
	// later incarnation.
	Passivate struct {
		Type   string
		Shard  shard.ID
		Entity shard.EntityID
		Inc    Incarnation
	}
	// RegisterType starts hosting an entity type; Done hears the outcome.
	RegisterType struct {
		Spec EntityType
		Done func(error)
	}
	// FormCluster starts a new cluster with this member.
	FormCluster struct{}
	// JoinVia asks Seed to admit this member.
	JoinVia struct{ Seed membership.NodeID }
	// JoinSeeds gives every seed this member was configured with: when none of them is in a
	// cluster, the one with the lowest id forms one (membership/bootstrap.go).
	JoinSeeds struct{ Seeds []membership.NodeID }
	// Leave starts a graceful leave: every shard is handed off, then the member leaves.
	Leave struct{}
	// Down marks Node Down, as an operator would; Done hears whether it was a member.
	Down struct {
		Node membership.NodeID
		Done func(bool)
	}
	// ChangeDirective stores a change of the operator's directives and applies it; Done
	// hears the outcome once the directives in force were read back. Signed is the request
	// that makes the change, as its admin signed it (SignDirective): it is stored as it is,
	// and every member verifies it against its own admin set before it follows it.
	ChangeDirective struct {
		Signed []byte
		Done   func(error)
	}
	// ReadDirectives reads the operator's directives from the store now (a read that
	// starts after this input) and tells Done the directives as read, or why they were not.
	ReadDirectives struct {
		Done func(engine.Directives, error)
	}
	// StoreLanded names records other members wrote that landed in this member's replica of
	// shards it hosts (remember.Ready.Landed): their reminders are read again.
	StoreLanded struct{ Keys []string }
	// StoreSpace says whether the member's store refuses writes for want of disk space: its
	// regions then take no new shards (StoreSpace{Full: false} takes them again).
	StoreSpace struct{ Full bool }
	// ReminderOp is an entity incarnation's reminder operation (EntityContext's reminder
	// methods). It is carried out once the shard's reminders are loaded here, and only
	// while the shard is hosted here with Epoch; Done hears the outcome (for RemindList,
	// with the entity's reminders).
	ReminderOp struct {
		Kind ReminderOpKind
		// Reminder names the entity (Type, Shard, Entity) always, the reminder (Name) for a
		// register or a cancel, and what it does (Due, Every, Payload) for a register.
		Reminder Reminder
		// After is when a registered reminder fires first, from when the core takes the
		// operation.
		After time.Duration
		Epoch coordinator.Epoch
		Done  func([]Reminder, error)
	}
	// TimerOp starts or cancels an in-memory timer of incarnation Inc (EntityContext's
	// timers): it fires while Inc runs and dies with it.
	TimerOp struct {
		Type   string
		Shard  shard.ID
		Entity shard.EntityID
		Inc    Incarnation
		Key    string
		// Gen is the timer's generation in the incarnation: a message of an earlier one
		// (cancelled, or replaced by a timer of the same key) is dropped when it is handled.
		Gen    uint64
		Msg    any
		After  time.Duration
		Every  time.Duration // 0: a single timer
		Cancel bool
	}
	// Query runs Fn with read access to the core, for inspection (admin). Fn must not change
	// anything.
	Query struct{ Fn func(now time.Time, c *Core) }
)

func (Deliver) isInput()             {}
func (MemberMessage) isInput()       {}
func (CoordMessage) isInput()        {}
func (ShardingEventIn) isInput()     {}
func (StoreDone) isInput()           {}
func (LeaseAcquired) isInput()       {}
func (LeaseLost) isInput()           {}
func (ResolverLeaseResult) isInput() {}
func (EntityStopped) isInput()       {}
func (Passivate) isInput()           {}
func (RegisterType) isInput()        {}
func (FormCluster) isInput()         {}
func (JoinVia) isInput()             {}
func (JoinSeeds) isInput()           {}
func (Leave) isInput()               {}
func (Down) isInput()                {}
func (ChangeDirective) isInput()     {}
func (ReadDirectives) isInput()      {}
func (StoreSpace) isInput()          {}
func (StoreLanded) isInput()         {}
func (ReminderOp) isInput()          {}
func (TimerOp) isInput()             {}
func (Query) isInput()               {}
