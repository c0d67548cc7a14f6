package coordinator

import (
	"time"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Event is something the coordinator did, for logs, metrics, the watch stream and the
// placement history. The set is sealed.
type Event interface{ isEvent() }

// Cause says why a shard moved.
type Cause string

// Causes of a handoff.
const (
	CauseRebalance Cause = "rebalance"         // the strategy moved it
	CauseShutdown  Cause = "graceful-shutdown" // its region is shutting down
	CauseConflict  Cause = "conflict"          // two regions reported it; the older epoch is stopped
	CauseDrain     Cause = "drain"             // an operator drains its member
	CauseOperator  Cause = "operator-move"     // an operator pinned it to another member
	CauseStopType  Cause = "type-stopped"      // an operator took its entity type out of service
)

// Causes of an allocation that follows no handoff (ShardAllocated.Cause).
const (
	CauseNew           Cause = "new"              // the shard had no home: first message, or remembered entities
	CauseMemberDowned  Cause = "member-downed"    // its member was downed (crashed, cut off)
	CauseMemberLeft    Cause = "member-left"      // its member left without handing it off in time
	CauseMemberRemoved Cause = "member-removed"   // its member was removed
	CauseRestarted     Cause = "member-restarted" // its member came back as a new incarnation
)

// Events.
type (
	// Recovered reports that the coordinator has heard from every region and starts answering.
	Recovered struct {
		Term    uint64
		Regions int
		Shards  int
		Took    time.Duration
	}
	// RegionRegistered reports that a region (or proxy) registered.
	RegionRegistered struct {
		Region membership.NodeID
		Proxy  bool
	}
	// RegionTerminated reports that a region's member left or was removed; its shards are deallocated.
	RegionTerminated struct {
		Region membership.NodeID
		Shards []shard.ID
	}
	// ShardAllocated reports that a shard got a home, and why: CauseNew, a handoff's cause
	// (From is the region it left, Took the handoff, Entities the incarnations it stopped), or
	// the loss of its region (From).
	ShardAllocated struct {
		Shard    shard.ID
		Region   membership.NodeID
		Epoch    Epoch
		From     membership.NodeID
		Cause    Cause
		Took     time.Duration
		Entities int
	}
	// HandoffStarted reports that a shard's handoff began.
	HandoffStarted struct {
		Shard shard.ID
		From  membership.NodeID
		Epoch Epoch
		Cause Cause
	}
	// HandoffPhase reports that a handoff moved on (all regions buffering; entities stopping).
	HandoffPhase struct {
		Shard shard.ID
		Epoch Epoch
		Phase Phase
	}
	// HandoffCompleted reports that the shard stopped at its old home and is free to move.
	HandoffCompleted struct {
		Shard    shard.ID
		From     membership.NodeID
		Epoch    Epoch
		Took     time.Duration
		Entities int // incarnations the handoff stopped
	}
	// HandoffFailed reports that the handoff did not finish within handoff-timeout; the shard stays where it
	// was, under a new epoch.
	HandoffFailed struct {
		Shard   shard.ID
		Epoch   Epoch
		Phase   Phase
		Waiting []membership.NodeID // regions that had not answered
	}
	// RebalanceRound reports the shards the strategy chose to move.
	RebalanceRound struct {
		Shards []shard.ID
	}
)

func (Recovered) isEvent()        {}
func (RegionRegistered) isEvent() {}
func (RegionTerminated) isEvent() {}
func (ShardAllocated) isEvent()   {}
func (HandoffStarted) isEvent()   {}
func (HandoffPhase) isEvent()     {}
func (HandoffCompleted) isEvent() {}
func (HandoffFailed) isEvent()    {}
func (RebalanceRound) isEvent()   {}

// Ready is what the coordinator wants done since the last call to Ready.
type Ready struct {
	Messages []Envelope
	Events   []Event
	// LoadShards asks for the shards that hold remembered entities (RememberEntities);
	// answer with Coordinator.ShardsLoaded.
	LoadShards bool
}
