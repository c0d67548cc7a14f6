package admin

import "time"

// Protocol is the admin protocol id.
const Protocol = "/shardmesh/admin/1"

// CallTimeout bounds a call that is not streaming: the server waits that long for the
// request and spends at most that long on the answer; a client without a deadline of its own
// waits that long for it.
const CallTimeout = 30 * time.Second

// MaxAskTimeout is the longest an ask through the admin protocol may wait for its entity's
// reply (shardctl ask --timeout); a longer one is refused as bad usage.
const MaxAskTimeout = 10 * time.Minute

// Phases of a graceful shutdown (ShutdownProgress.Phase).
const (
	PhaseHandingOff = "handing-off" // shards still here, or messages buffered
	PhaseLeaving    = "leaving"     // every shard handed off; leaving the cluster
	PhaseLeft       = "left"        // the member has left and stopped
)

// Phases of a handoff (HandoffInfo.Phase), as `shardctl handoffs` shows them.
const (
	HandoffBegun    = "begun"             // regions are being told to buffer; waiting_regions have not yet
	HandoffStopping = "stopping-entities" // every region buffers; the old home stops its entities (stragglers)
	HandoffStopped  = "stopped"           // the old home has no entity left; the coordinator re-allocates next
)
