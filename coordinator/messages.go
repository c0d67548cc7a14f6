package coordinator

import (
	"fmt"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Epoch orders the allocations of a shard: a later allocation has a higher epoch.
type Epoch uint64

// NewEpoch composes an epoch from the coordinator's term (its member's up-number) and a
// sequence number within the term.
func NewEpoch(term uint64, seq uint32) Epoch { return Epoch(term<<32 | uint64(seq)) }

// Term returns the coordinator term the epoch was issued in.
func (e Epoch) Term() uint64 { return uint64(e) >> 32 }

// Seq returns the sequence number within the term.
func (e Epoch) Seq() uint32 { return uint32(e) }

func (e Epoch) String() string { return fmt.Sprintf("%d.%d", e.Term(), e.Seq()) }

// Message is a message of the coordinator protocol (between regions and the coordinator).
// The set is sealed.
type Message interface{ isMessage() }

// HostedState is how a region reports a shard it hosts.
type HostedState uint8

// States of a hosted shard.
const (
	HostedActive   HostedState = iota // serving
	HostedStopping                    // handing off: entities stopping
)

// Hosted is a shard a region reports when it registers.
type Hosted struct {
	Shard shard.ID
	Epoch Epoch
	State HostedState
}

// Messages from a region to the coordinator.
type (
	// Register announces a region (or a proxy) to the coordinator, with the shards it
	// hosts. Regions send it to every new coordinator and repeat it until acknowledged,
	// and send it again when NoNewShards changes.
	Register struct {
		Incarnation uint64
		Proxy       bool
		Hosted      []Hosted
		// NoNewShards: the region's member takes no new shards now (its store's disk is
		// full): the coordinator allocates none there, and keeps the ones it has.
		NoNewShards bool
	}
	// GetShardHome asks where a shard lives.
	GetShardHome struct{ Shard shard.ID }
	// ShardStarted acknowledges HostShard.
	ShardStarted struct {
		Shard shard.ID
		Epoch Epoch
	}
	// BeginHandOffAck acknowledges BeginHandOff: the region buffers the shard's messages.
	BeginHandOffAck struct {
		Shard shard.ID
		Epoch Epoch
	}
	// ShardStopped reports that the owner stopped every entity of the shard after HandOff;
	// Entities is how many incarnations that stopped (for the placement history).
	ShardStopped struct {
		Shard    shard.ID
		Epoch    Epoch
		Entities int
	}
	// GracefulShutdownReq asks the coordinator to hand off every shard of the region.
	GracefulShutdownReq struct{}
	// NoRegion answers RequestRegister from a member that does not run the entity type.
	NoRegion struct{ Incarnation uint64 }
)

// Messages from the coordinator to a region.
type (
	// RegisterAck accepts a region's registration.
	RegisterAck struct{ Term uint64 }
	// ShardHome tells where a shard lives.
	ShardHome struct {
		Shard  shard.ID
		Region membership.NodeID
		Epoch  Epoch
	}
	// HostShard asks the region of member incarnation Incarnation to start a shard; it
	// answers ShardStarted. Another incarnation of the member (a restarted process that got
	// a message meant for the one before) ignores it; 0 names none.
	//
	// With After set it names the shard's next home during a handoff: the region starts the
	// shard once the old home After tells it that the shard's allocation AfterEpoch stopped
	// (HandedOver), or on a HostShard without After, whichever comes first. Until then it
	// holds the shard's messages.
	HostShard struct {
		Shard       shard.ID
		Epoch       Epoch
		Incarnation uint64
		After       membership.NodeID
		AfterEpoch  Epoch
	}
	// BeginHandOff tells every region that the shard's allocation Epoch is being handed
	// off: forget its home and buffer its messages.
	BeginHandOff struct {
		Shard shard.ID
		Epoch Epoch
	}
	// HandOff asks the owner to stop every entity of the shard; it answers ShardStopped.
	// Next, when set, is the shard's next home (its allocation NextEpoch): once stopped the
	// owner tells it so directly (HandedOver) and sends it what it held for the shard.
	HandOff struct {
		Shard     shard.ID
		Epoch     Epoch
		Next      membership.NodeID
		NextEpoch Epoch
	}
	// RequestRegister asks a member to register its region (answered by Register) or to
	// say it runs none (NoRegion). A recovering coordinator asks every member with the role.
	RequestRegister struct{}
)

// Messages from a region to another.
type (
	// HandedOver tells a shard's next home (HandOff.Next) that the old home stopped the
	// shard's allocation Epoch: the next home starts it without waiting for the
	// coordinator's HostShard, which follows.
	HandedOver struct {
		Shard shard.ID
		Epoch Epoch
	}
)

func (Register) isMessage()            {}
func (GetShardHome) isMessage()        {}
func (ShardStarted) isMessage()        {}
func (BeginHandOffAck) isMessage()     {}
func (ShardStopped) isMessage()        {}
func (GracefulShutdownReq) isMessage() {}
func (NoRegion) isMessage()            {}
func (RequestRegister) isMessage()     {}
func (RegisterAck) isMessage()         {}
func (ShardHome) isMessage()           {}
func (HostShard) isMessage()           {}
func (BeginHandOff) isMessage()        {}
func (HandOff) isMessage()             {}
func (HandedOver) isMessage()          {}

// Envelope is a coordinator protocol message to send to a member's region (or, from a
// region, to the member running the coordinator).
type Envelope struct {
	To  membership.NodeID
	Msg Message
}
