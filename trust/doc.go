// Package trust decides who a shardmesh member trusts, and with what. It knows four
// principals (docs/security.md has the threat model):
//
//   - a key holder reaches the mesh at all: it holds the cluster key (the libp2p private
//     network key). It may read what admin-read-only-open allows, and no more.
//   - a member is admitted: it holds a member credential issued by a cluster authority the
//     members trust (Policy.Authorities), checked when it joins; or, when the cluster has
//     no authority (open admission, for a local trial), it is any key holder that joined.
//     Only members speak the member protocols: the member's state machines take what a
//     peer sends only from the admitted members of their membership (node.Core,
//     remember.Machine), holding what comes a moment early (Waiting); Gate tells the
//     operator of what they refused and keeps gossip from being relayed.
//   - an admin signs requests that change the cluster with its identity key. Each member
//     that enacts such a request checks the signature against its own admin set: the peer
//     ids of its admin-allow, and holders of an admin credential from its authorities. A
//     member that forwards a request never vouches for it.
//   - an authority is an offline key that issues member and admin credentials (as
//     CockroachDB's CA issues node and client certificates): shardctl keygen authority,
//     shardctl credential member|admin.
//
// Everything here is a pure function of its inputs (keys, bytes, the time passed in),
// except Gate, which counts and logs what the machines refuse.
package trust
