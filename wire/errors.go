package wire

import (
	"errors"
	"fmt"
)

// ProtocolVersion is the version of every shardmesh protocol this build speaks. Each envelope
// carries it; a frame of another version is refused with an ErrVersion error. 2: heartbeats
// echo heartbeats, and the majority lease counts only echoed grants (a member of version 1
// would never grant one, so the two must not share a cluster). 3: the voters (a member of
// version 2 would count every member in the lease and the split-brain resolver's majority).
// 4: trust (issue 17). What changed: a join request carries the joining member's credential
// and a join reply the admitting member's (admission by a cluster authority); directives
// are stored as the request an admin signed, one record per signer (op␀SIGNER␀KIND…, undos
// signed too); admin calls that change the cluster travel signed, with a nonce, the time
// and the member they are for; and membership gossip, coordination, region and replica
// frames are taken only from admitted members of the receiver's membership. A member of
// version 3 would admit any key holder, would read a signed directive's undo as the
// directive set, and would merge the gossip of a member nobody admitted.
// 5: the WeaklyUp status, which renumbers the statuses after Joining; bucket digests computed
// over 256 fine buckets; a heartbeat's one echo, for its receiver, and its Answer mark (a
// member of version 4 would misread all of them).
// 6: issue 24. A forwarded message may be Akka's StartEntity (start_entity, no payload), may
// carry the epoch of the home it is sent to, may come back as a "not the home" bounce for
// its sender to route again, and may carry a trace context. A member of version 5 would
// hand a StartEntity to the entity as an empty message and would route a bounce as a new
// message; epochs and traces alone it would ignore, harmlessly.
// 7: a handoff names the shard's next home (HandOff and HostShard carry a peer), and the
// old home tells it directly that the shard stopped (handed_over). A member of version 6
// would take the naming HostShard for an order to start the shard at once.
// 8: replica sets (issue 19). A shard's records live on a replica set of
// replication-factor members and the cluster metadata is one Raft group over the voters
// (remember/metaraft); the replica protocol carries unit configurations, moves, unit
// digests, drops, tombstone collection and the group's frames (raft, meta_call,
// meta_answer, meta_join, meta_removed), and the sharding events a departure
// (STORE_DEPARTING). A member of version 7 would store every key and count every member.
const ProtocolVersion = 8

// Errors returned by the decoders.
var (
	// ErrVersion: the peer speaks another protocol version.
	ErrVersion = errors.New("incompatible protocol version")
	// ErrMalformed: the frame is not a valid message.
	ErrMalformed = errors.New("malformed message")
)

// Limits on what a decoded message may hold, so a hostile frame cannot make a member hold
// unbounded state.
const (
	maxIDLen      = 256
	maxMembers    = 100_000
	maxListLen    = 64
	maxStringLen  = 1024
	maxCheckCount = 64
	// maxCredentialLen bounds a member credential in a join (trust's own bound is smaller).
	maxCredentialLen = 8192
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

func checkVersion(protocol string, v uint32) error {
	if v != ProtocolVersion {
		return fmt.Errorf("%w: the peer speaks %s protocol version %d, this member speaks %d; run the same shardmesh release on every member (or one that speaks both)", ErrVersion, protocol, v, ProtocolVersion)
	}
	return nil
}

func checkID(field, id string) error {
	if id == "" {
		return malformed("%s is empty", field)
	}
	if len(id) > maxIDLen {
		return malformed("%s is %d bytes long (at most %d)", field, len(id), maxIDLen)
	}
	return nil
}

func checkStrings(field string, ss []string, maxLen int) error {
	if len(ss) > maxLen {
		return malformed("%s has %d entries (at most %d)", field, len(ss), maxLen)
	}
	for _, s := range ss {
		if len(s) > maxStringLen {
			return malformed("%s has an entry of %d bytes (at most %d)", field, len(s), maxStringLen)
		}
	}
	return nil
}

// Count32 is a non-negative count as the uint32 of a frame, capped at 2³¹.
func Count32(n int) uint32 { return uint32(min(max(n, 0), 1<<31)) }
