// Package region is the shard region of one entity type on one member, as a pure state
// machine: it routes each message to its shard's home (a local shard, or another member's
// region), asks the coordinator for homes it does not know and buffers meanwhile, takes part
// in handoffs (buffering a shard's messages from BeginHandOff until its new home is known),
// registers with every new coordinator, and runs graceful shutdown. A region on a member
// without the type's role is a proxy: it routes but never hosts.
//
// Messages are opaque to the region: an Envelope carries the shard and entity ids it routes
// by and a payload the runtime owns. Nothing is dropped silently: a message the region cannot
// keep (buffer full, too many hops, shutting down) comes back as a Rejected output, so the
// sender can be told.
package region
