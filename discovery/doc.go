// Package discovery finds the members of a cluster by DNS, so that a Kubernetes
// StatefulSet behind a headless Service, or any DNS round-robin name, forms one cluster
// with no fixed seed (sharddaemon --join-dns NAME).
//
// It works in rounds, every Interval until the member has joined: resolve the name (A and
// AAAA records, or SRV records for a name of the form _service._proto.domain), learn the
// peer id of every new address (p2p.Host.IdentifyAddr: an address from DNS carries none),
// connect, and ask every member found to admit this one. A member that is already in a
// cluster admits it within a round trip.
//
// When nobody admits it — a cold start of the whole cluster — exactly one member must form
// a new cluster, or each would form its own and they would never merge. The rule is Akka
// Cluster Bootstrap's (LowestAddressJoinDecider), decided by Bootstrap, a pure function of
// the rounds: a member forms only when the name lists it, every address the name lists
// has answered with its peer id, at least MinMembers members were found, the set found has
// not changed for StableMargin, and its own peer id sorts lowest. Peer ids rather than
// addresses are compared because every member sees the same id for a member, whereas a
// member cannot tell which address in the answer is its own without asking it. Two
// members can both form only if their DNS answers disagree for longer than StableMargin;
// MinMembers equal to the number of members deployed (cluster.min-nr-of-members) closes
// that gap, since every member then waits until it sees all of them.
package discovery
