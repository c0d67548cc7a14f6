package config

import (
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/config/value"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/passivation"
)

// Config is everything a daemon is configured with.
type Config struct {
	Node       Node
	Membership membership.Config
	Sharding   Sharding
	Store      Store

	// origins maps each key set by a source to that source and the value written (Origin).
	origins map[string]origin

	// passivation gathers the sharding.passivation keys while loading, flattened to dotted
	// keys below the block, in the order the sources set them.
	passivation map[string]any
}

// Node holds the daemon's own settings (the top-level keys of the file).
type Node struct {
	// DataDir holds the identity key, the incarnation counter, the listen addresses (addrs)
	// and the durable state. Required.
	DataDir string
	// Listen are multiaddrs to listen on. Default: /ip4/127.0.0.1/tcp/0.
	Listen []string
	// Join are multiaddrs (ending in /p2p/<peer id>) of members to join through. Empty:
	// form a new cluster, unless JoinDNS finds the members.
	Join []string
	// JoinDNS finds the members by DNS (join-dns; discovery.go).
	JoinDNS JoinDNS
	// ClusterKey is the path of the cluster's private-network key (shardctl keygen). Empty:
	// an open mesh.
	ClusterKey string
	// ClusterKeyAccept are paths of further cluster keys accepted from connecting peers
	// (ClusterKey alone is used to dial): to rotate the key without downtime
	// (docs/security.md).
	ClusterKeyAccept []string
	// ClusterName names the cluster's gossip topics and mDNS service. Default "shardmesh".
	ClusterName string
	// Roles are this member's roles.
	Roles []string
	// Zone is cluster.zone (--zone): the member's zone (a rack, an availability zone);
	// replica sets spread over zones. "" for none.
	Zone string
	// AppVersion is this member's application version (rolling updates). Default "0".
	AppVersion string
	// AllowPeers, when set, is the only set of peer ids this member talks to.
	AllowPeers []string
	// AdminAllow are peer ids of admin identities allowed to change the cluster.
	AdminAllow []string
	// ClusterAuthority are the peer ids of the cluster authorities (shardctl keygen
	// authority) whose credentials this member trusts: a member joins only with a member
	// credential from one of them, and an identity with an admin credential from one is an
	// admin. Empty: open admission, any key holder can join as a member (warned of).
	ClusterAuthority []string
	// MemberCredential is the file with this member's credential (shardctl credential
	// member). Default: <data-dir>/member.credential, when it exists.
	MemberCredential string
	// OpenMesh allows listening on an address other than loopback without a cluster key
	// (an open mesh, which anyone who reaches it can join). Default off: refused.
	OpenMesh bool
	// OperatorNetworks are the networks (CIDRs) shardctl connects from: exempt from the
	// per-address connection limits, with a budget of their own in a connection flood.
	// Default: this host (127.0.0.1/32, ::1/128).
	OperatorNetworks []string
	// AdminReadOnlyOpen answers admin calls that only read (and messages to entities) to
	// any peer holding the cluster key; off, only to admins and members. Default on.
	AdminReadOnlyOpen bool
	// MDNS turns on discovery of members on the local network. Default off.
	MDNS bool
	// ForgetLastCluster starts the member as a new one: it does not read the size of the
	// cluster it was last Up in, so a cluster forming after a restart does not wait for a
	// majority of it (cluster.forget-last-cluster). For a cluster restarted for good with
	// fewer members; the store may then miss writes made on the members that do not come
	// back. Default off.
	ForgetLastCluster bool
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string
	// LogFormat is text or json. Default text.
	LogFormat string
	// MetricsListen is the host:port the daemon serves Prometheus metrics (/metrics) and
	// the probes (/healthz, /readyz) on;
	// port 0 picks a free one, written to <data-dir>/metrics-addr. Empty: no metrics.
	MetricsListen string
	// EntityTypes are the daemon's built-in entity types to run (counter, echo, register, stubborn).
	EntityTypes []string
}

// Sharding holds the sharding settings (akka.cluster.sharding), the defaults of every entity
// type.
type Sharding struct {
	// NumberOfShards of the default extractor; equal on every member (number-of-shards).
	// Default 1000.
	NumberOfShards int
	// Role: entities run on members with this role; others proxy (role). Default "".
	Role string
	// RetryInterval repeats unanswered registrations and home requests (retry-interval).
	// Default 2 s.
	RetryInterval time.Duration
	// BufferSize bounds the messages a region buffers (buffer-size). Default 100000.
	BufferSize int
	// HandoffTimeout bounds a handoff (handoff-timeout). Default 60 s.
	HandoffTimeout time.Duration
	// ShardStartTimeout is how long a region has to confirm a new shard (shard-start-timeout).
	// Default 10 s.
	ShardStartTimeout time.Duration
	// RebalanceInterval is how often the allocation strategy is asked to rebalance
	// (rebalance-interval). Default 10 s.
	RebalanceInterval time.Duration
	// WaitingForStateTimeout is how often a recovering coordinator asks a member again
	// (waiting-for-state-timeout). Default 2 s.
	WaitingForStateTimeout time.Duration
	// ShardRegionQueryTimeout bounds the answers to stats and region-state queries
	// (shard-region-query-timeout). Default 3 s.
	ShardRegionQueryTimeout time.Duration
	// AllocationStrategy is least-shard (default), consistent-hashing or external
	// (allocation-strategy; a shardmesh key). External is Akka's external allocation:
	// unpinned shards go to the member that asks for them and are never rebalanced; pins
	// (`shardctl shard move|pin`, System.PinShard) place the others.
	AllocationStrategy string
	// LeastShard configures least-shard-allocation-strategy.
	LeastShard allocation.LeastShardConfig
	// ConsistentHashing configures consistent-hashing-allocation-strategy.
	ConsistentHashing allocation.ConsistentHashingConfig
	// Passivation is the automatic passivation of every type's entities (passivation).
	// Default: default-idle-strategy, entities idle for 120 s stop.
	Passivation passivation.Settings
	// Remember is remembered entities and the replicated store (config/remember.go).
	Remember Remember
	// History is the placement history (sharding.placement-history).
	History PlacementHistory
	// Lease is the per-shard lease (use-lease).
	Lease Lease
}

// Default returns the defaults of every key.
func Default() Config {
	return Config{
		Node: Node{
			Listen:      []string{"/ip4/127.0.0.1/tcp/0"},
			ClusterName: "shardmesh",
			AppVersion:  "0",
			LogLevel:    "info",
			LogFormat:   "text",
			JoinDNS:     DefaultJoinDNS(),

			AdminReadOnlyOpen: true,
		},
		Membership: membership.DefaultConfig(),
		Sharding: Sharding{
			NumberOfShards:          1000,
			RetryInterval:           2 * time.Second,
			BufferSize:              100000,
			HandoffTimeout:          60 * time.Second,
			ShardStartTimeout:       10 * time.Second,
			RebalanceInterval:       10 * time.Second,
			WaitingForStateTimeout:  2 * time.Second,
			ShardRegionQueryTimeout: 3 * time.Second,
			AllocationStrategy:      "least-shard",
			LeastShard:              shardmeshLeastShard(),
			ConsistentHashing:       allocation.DefaultConsistentHashingConfig(),
			Passivation:             passivation.DefaultSettings(),
			Remember:                DefaultRemember(),
			History:                 DefaultPlacementHistory(),
			Lease:                   DefaultLease(),
		},
		Store: DefaultStore(),
	}
}

// PeerIDs parses the peer ids of a key (allow-peers, admin-allow).
func PeerIDs(key string, ss []string) ([]peer.ID, error) {
	ids := make([]peer.ID, 0, len(ss))
	for _, s := range ss {
		id, err := peer.Decode(s)
		if err != nil {
			return nil, &value.Error{Key: key, Value: s, Allowed: "a libp2p peer id (the /p2p/... part of a member's address, or what shardctl keygen admin prints)"}
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// checkJoinAddrs refuses join addresses that cannot be dialled as a member: each must be a
// multiaddr that ends in /p2p/<peer id>, or the member would retry a join it can never make.
func checkJoinAddrs(addrs []string) []error {
	var errs []error
	for _, a := range addrs {
		ma, err := multiaddr.NewMultiaddr(a)
		if err == nil {
			_, err = peer.AddrInfoFromP2pAddr(ma)
		}
		if err != nil {
			errs = append(errs, &value.Error{Key: "join", Value: a,
				Allowed: "a member's multiaddr ending in /p2p/<peer id>, e.g. /ip4/10.0.0.1/tcp/4001/p2p/12D3KooW... (the first line of its DIR/addrs)"})
		}
	}
	return errs
}

// Networks parses the CIDRs of key (an address alone is its own network).
func Networks(key string, ss []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, &value.Error{Key: key, Value: s, Allowed: "a network in CIDR notation (10.0.1.0/24, fd00::/64) or an address"}
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// shardmeshLeastShard is Akka's least-shard defaults with the rolling update moves on.
func shardmeshLeastShard() allocation.LeastShardConfig {
	c := allocation.DefaultLeastShardConfig()
	c.RollingUpdateMoves = true
	return c
}
