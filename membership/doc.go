// Package membership is the cluster membership of shardmesh as a pure state machine:
// members and their statuses (Joining → Up → Leaving → Exiting → Removed, and Down), roles,
// app versions, age (the up-number that decides which member is oldest), phi-accrual failure
// detection over heartbeats, and a split-brain resolver that downs members only from the side
// that holds the quorum.
//
// The machine never touches a socket, a timer or the clock. The caller feeds it messages from
// peers with Step and the passing of time with Tick, and collects what it wants sent and what
// happened with Ready. Every message is addressed to one member: a member's cost does not grow
// with the cluster (heartbeats to its neighbors and the voters, topology.go; push-pull
// exchanges of the parts of the state that differ, gossip.go; the voters, voters.go).
//
// # Convergence
//
// The membership state is a join-semilattice: merging two states takes, per member, the record
// of the newest incarnation and within one incarnation the most advanced status (Joining < Up <
// Leaving < Exiting < Down < Removed), and per observer the newest reachability row. Any two
// members that have seen the same set of updates hold the same state, whatever the order.
// Heartbeats carry a digest of the sender's state; the leader — the first reachable Up or
// Leaving voter in NodeID order, which exchanges heartbeats with every member — moves members
// forward (Joining → Up, Leaving → Exiting, Exiting → Removed, Down → Removed) and makes
// voters only when every reachable member reports its digest, as Akka's leader acts only on
// gossip convergence.
package membership
