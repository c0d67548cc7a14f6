// Package node runs one shardmesh member: it owns the data directory, the libp2p host and
// the gossip topics, and drives the pure state machines (membership today, the sharding
// machines as they arrive) from one loop goroutine that feeds them messages and clock ticks
// and carries out what they ask: frames to send, gossip to publish, events to report.
//
// Nothing here decides anything about the cluster; the machines do. This package is the
// imperative shell around them.
package node
