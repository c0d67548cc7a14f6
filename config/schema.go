package config

import (
	"math"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/config/value"
	"github.com/shardmesh/shardmesh/membership"
)

// Key is one configuration key.
type Key struct {
	// Path is the dotted key ("cluster.failure-detector.threshold").
	Path string
	// Usage is the one-line help, with the default.
	Usage string
	// Flag, when set, is the name of a dedicated command-line flag for the key.
	Flag string
	// set parses a raw value (as the file decoder, a flag or an environment variable gives
	// it) into the configuration.
	set func(c *Config, raw any) error
	// get returns the value in effect (for sharddaemon config show); nil for the keys of a
	// block read as a whole (sharding.passivation.*, cluster.role.*), shown as set.
	get func(c *Config) any
	// List marks keys whose flag may be repeated.
	List bool
}

// Env returns the environment variable that overrides the key.
func (k Key) Env() string {
	return "SHARDMESH_" + strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(k.Path))
}

func durationKey(path, usage string, least time.Duration, field func(*Config) *time.Duration) Key {
	return Key{Path: path, Usage: usage, get: func(c *Config) any { return *field(c) }, set: func(c *Config, raw any) error {
		d, err := value.Duration(path, raw, "at least "+least.String())
		if err != nil {
			return err
		}
		if d < least {
			return &value.Error{Key: path, Value: raw, Allowed: "a duration of at least " + least.String()}
		}
		*field(c) = d
		return nil
	}}
}

// onOffDurationKey reads "on" (the default: 0), "off" (membership.Off) or a positive duration.
func onOffDurationKey(path, usage string, field func(*Config) *time.Duration) Key {
	get := func(c *Config) any {
		switch d := *field(c); d {
		case 0:
			return true // on
		case membership.Off:
			return false
		default:
			return d
		}
	}
	return Key{Path: path, Usage: usage, get: get, set: func(c *Config, raw any) error {
		switch {
		case value.IsOff(raw):
			*field(c) = membership.Off
			return nil
		case raw == true || raw == "on":
			*field(c) = 0
			return nil
		}
		d, err := value.Duration(path, raw, "on, off or a positive duration")
		if err == nil && d <= 0 {
			err = &value.Error{Key: path, Value: raw, Allowed: "on, off or a positive duration"}
		}
		if err == nil {
			*field(c) = d
		}
		return err
	}}
}

func intKey(path, usage string, lo, hi int, field func(*Config) *int) Key {
	return Key{Path: path, Usage: usage, get: func(c *Config) any { return *field(c) }, set: func(c *Config, raw any) error {
		n, err := value.Int(path, raw, lo, hi)
		if err == nil {
			*field(c) = n
		}
		return err
	}}
}

func floatKey(path, usage string, lo, hi float64, field func(*Config) *float64) Key {
	return Key{Path: path, Usage: usage, get: func(c *Config) any { return *field(c) }, set: func(c *Config, raw any) error {
		f, err := value.Float(path, raw, lo, hi)
		if err == nil {
			*field(c) = f
		}
		return err
	}}
}

func boolKey(path, usage string, field func(*Config) *bool) Key {
	return Key{Path: path, Usage: usage, get: func(c *Config) any { return *field(c) }, set: func(c *Config, raw any) error {
		b, err := value.Bool(path, raw)
		if err == nil {
			*field(c) = b
		}
		return err
	}}
}

func stringKey(path, usage string, field func(*Config) *string) Key {
	return Key{Path: path, Usage: usage, get: func(c *Config) any { return *field(c) }, set: func(c *Config, raw any) error {
		s, err := value.String(path, raw)
		if err == nil {
			*field(c) = s
		}
		return err
	}}
}

func enumKey(path, usage string, field func(*Config) *string, allowed ...string) Key {
	return Key{Path: path, Usage: usage + " (" + strings.Join(allowed, ", ") + ")", get: func(c *Config) any { return *field(c) }, set: func(c *Config, raw any) error {
		s, err := value.Enum(path, raw, allowed...)
		if err == nil {
			*field(c) = s
		}
		return err
	}}
}

func listKey(path, usage string, field func(*Config) *[]string) Key {
	return Key{Path: path, Usage: usage, List: true, get: func(c *Config) any { return *field(c) }, set: func(c *Config, raw any) error {
		ss, err := value.Strings(path, raw)
		if err == nil {
			*field(c) = ss
		}
		return err
	}}
}

// zoneKey is cluster.zone, set with --zone too.
func zoneKey() Key {
	k := stringKey("cluster.zone", "this member's zone (a rack, an availability zone): replica sets spread over zones; it shows as the role zone-<zone> (default: none)", func(c *Config) *string { return &c.Node.Zone })
	k.Flag = "zone"
	return k
}

func flagged(k Key) Key {
	k.Flag = k.Path
	return k
}

// roleMinKey is the one key with a user-chosen segment: cluster.role.<name>.min-nr-of-members.
const roleMinPrefix, roleMinSuffix = "cluster.role.", ".min-nr-of-members"

func roleMinKey(path string) (Key, bool) {
	if !strings.HasPrefix(path, roleMinPrefix) || !strings.HasSuffix(path, roleMinSuffix) {
		return Key{}, false
	}
	role := strings.TrimSuffix(strings.TrimPrefix(path, roleMinPrefix), roleMinSuffix)
	if role == "" || strings.Contains(role, ".") {
		return Key{}, false
	}
	return Key{Path: path, set: func(c *Config, raw any) error {
		n, err := value.Int(path, raw, 1, math.MaxInt32)
		if err != nil {
			return err
		}
		if c.Membership.RoleMinNrOfMembers == nil {
			c.Membership.RoleMinNrOfMembers = map[string]int{}
		}
		c.Membership.RoleMinNrOfMembers[role] = n
		return nil
	}}, true
}

// Schema is every key, in the order the documentation lists them.
var Schema = []Key{
	flagged(stringKey("data-dir", "directory for the identity, incarnation, addrs and durable state (required)", func(c *Config) *string { return &c.Node.DataDir })),
	flagged(listKey("listen", "multiaddr to listen on, repeatable (default /ip4/127.0.0.1/tcp/0)", func(c *Config) *[]string { return &c.Node.Listen })),
	flagged(listKey("join", "multiaddr of a member to join through, ending in /p2p/<peer id>, repeatable; none: form a new cluster", func(c *Config) *[]string { return &c.Node.Join })),
	flagged(stringKey("cluster-key", "file with the cluster's private-network key (shardctl keygen); none: an open mesh, refused beyond loopback (open-mesh)", func(c *Config) *string { return &c.Node.ClusterKey })),
	flagged(listKey("cluster-key-accept", "files of further cluster keys accepted from connecting peers, while the key is rotated (cluster-key alone dials)", func(c *Config) *[]string { return &c.Node.ClusterKeyAccept })),
	flagged(stringKey("cluster-name", "name of the cluster's gossip topics and mDNS service (default shardmesh)", func(c *Config) *string { return &c.Node.ClusterName })),
	flagged(listKey("roles", "this member's roles, comma-separated or repeated", func(c *Config) *[]string { return &c.Node.Roles })),
	zoneKey(),
	flagged(stringKey("app-version", "this member's application version, for rolling updates (default 0)", func(c *Config) *string { return &c.Node.AppVersion })),
	flagged(listKey("allow-peers", "peer ids this member may talk to (an allow-list); none: any holder of the cluster key", func(c *Config) *[]string { return &c.Node.AllowPeers })),
	flagged(listKey("admin-allow", "peer ids of admin identities allowed to change the cluster (shardctl keygen admin)", func(c *Config) *[]string { return &c.Node.AdminAllow })),
	flagged(listKey("cluster-authority", "ids of the cluster authorities (shardctl keygen authority) whose credentials admit members and admins; none: any key holder can join as a member", func(c *Config) *[]string { return &c.Node.ClusterAuthority })),
	flagged(stringKey("member-credential", "file with this member's credential (shardctl credential member); default DATA_DIR/member.credential when it exists", func(c *Config) *string { return &c.Node.MemberCredential })),
	flagged(boolKey("open-mesh", "allow listening beyond loopback without a cluster key: an open mesh anyone can join (default off: refused)", func(c *Config) *bool { return &c.Node.OpenMesh })),
	flagged(listKey("operator-networks", "CIDRs shardctl connects from: exempt from per-address connection limits, with headroom in a flood (default 127.0.0.1/32,::1/128)", func(c *Config) *[]string { return &c.Node.OperatorNetworks })),
	flagged(boolKey("mdns", "discover members on the local network with mDNS (default off)", func(c *Config) *bool { return &c.Node.MDNS })),
	flagged(enumKey("log-level", "log level (default info)", func(c *Config) *string { return &c.Node.LogLevel }, "debug", "info", "warn", "error")),
	flagged(enumKey("log-format", "log format (default text)", func(c *Config) *string { return &c.Node.LogFormat }, "text", "json")),
	flagged(stringKey("metrics-listen", "host:port to serve Prometheus metrics on at /metrics, and the probes /healthz (live) and /readyz (ready, as shardctl health); port 0 picks one, written to DIR/metrics-addr (default: none)", func(c *Config) *string { return &c.Node.MetricsListen })),
	flagged(listKey("entity-types", "built-in entity types to run: counter, echo, register, stubborn (comma-separated or repeated)", func(c *Config) *[]string { return &c.Node.EntityTypes })),

	intKey("cluster.min-nr-of-members", "members that must have joined before any is moved Up (default 1)", 1, math.MaxInt32, func(c *Config) *int { return &c.Membership.MinNrOfMembers }),
	boolKey("cluster.forget-last-cluster", "start as a new member: a cluster forming after a restart does not wait for a majority of the cluster this member was last Up in (default off; for a cluster restarted for good with fewer members)", func(c *Config) *bool { return &c.Node.ForgetLastCluster }),
	durationKey("cluster.gossip-interval", "how often state is re-gossiped while a member is behind (default 1s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Membership.GossipInterval }),
	durationKey("cluster.seed-node-timeout", "how long to wait for the seeds before asking again (default 5s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Membership.SeedNodeTimeout }),
	durationKey("cluster.down-removal-margin", "how long a Down member stays before removal, on top of what its majority lease needs (default: stable-after, as Akka; none with keep-majority, whose downed side never holds a majority lease)", 0, func(c *Config) *time.Duration { return &c.Membership.DownRemovalMargin }),
	durationKey("cluster.failure-detector.heartbeat-interval", "heartbeat interval (default 1s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Membership.FailureDetector.HeartbeatInterval }),
	floatKey("cluster.failure-detector.threshold", "phi above which a member is unreachable (default 8; at least 1: the majority lease relies on it)", 1, 1000, func(c *Config) *float64 { return &c.Membership.FailureDetector.Threshold }),
	intKey("cluster.failure-detector.max-sample-size", "heartbeat intervals kept per member (default 1000)", 1, 1_000_000, func(c *Config) *int { return &c.Membership.FailureDetector.MaxSampleSize }),
	durationKey("cluster.failure-detector.min-std-deviation", "floor of the heartbeat interval deviation (default 100ms)", time.Millisecond, func(c *Config) *time.Duration { return &c.Membership.FailureDetector.MinStdDeviation }),
	durationKey("cluster.failure-detector.acceptable-heartbeat-pause", "pause tolerated before phi rises (default 3s)", 0, func(c *Config) *time.Duration { return &c.Membership.FailureDetector.AcceptableHeartbeatPause }),
	durationKey("cluster.failure-detector.expected-response-after", "first heartbeat interval estimate (default 1s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Membership.FailureDetector.FirstHeartbeatEstimate }),
	{Path: "cluster.split-brain-resolver.active-strategy", Usage: "downing strategy (keep-majority, lease-majority, static-quorum, keep-oldest, down-all, off; default keep-majority)", get: func(c *Config) any { return string(c.Membership.SplitBrainResolver.ActiveStrategy) }, set: func(c *Config, raw any) error {
		s, err := value.Enum("cluster.split-brain-resolver.active-strategy", raw, "keep-majority", "lease-majority", "static-quorum", "keep-oldest", "down-all", "off")
		if err == nil {
			c.Membership.SplitBrainResolver.ActiveStrategy = membership.Strategy(s)
		}
		return err
	}},
	durationKey("cluster.split-brain-resolver.stable-after", "how long the unreachable set must be stable before a decision (default 20s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Membership.SplitBrainResolver.StableAfter }),
	stringKey("cluster.split-brain-resolver.keep-majority.role", "count only members with this role (default all)", func(c *Config) *string { return &c.Membership.SplitBrainResolver.Role }),
	intKey("cluster.split-brain-resolver.static-quorum.quorum-size", "members a side needs to survive with static-quorum", 1, math.MaxInt32, func(c *Config) *int { return &c.Membership.SplitBrainResolver.QuorumSize }),
	stringKey("cluster.split-brain-resolver.static-quorum.role", "count only members with this role (default all)", func(c *Config) *string { return &c.Membership.SplitBrainResolver.Role }),
	boolKey("cluster.split-brain-resolver.keep-oldest.down-if-alone", "with keep-oldest, an oldest member alone is downed instead (default on)", func(c *Config) *bool { return &c.Membership.SplitBrainResolver.DownIfAlone }),
	stringKey("cluster.split-brain-resolver.keep-oldest.role", "count only members with this role (default all)", func(c *Config) *string { return &c.Membership.SplitBrainResolver.Role }),
	onOffDurationKey("cluster.split-brain-resolver.down-all-when-unstable", "when the unreachable members keep changing for stable-after plus this without a decision, every member downs itself (on: 3/4 of stable-after, at least 4s; off; or a duration; default on)", func(c *Config) *time.Duration { return &c.Membership.SplitBrainResolver.DownAllWhenUnstable }),
	stringKey("cluster.split-brain-resolver.lease-majority.lease-implementation", `the lease of lease-majority: "store" (kept in the replicated store) or the name of a provider given with shardmesh.WithLease (default store)`, func(c *Config) *string { return &c.Membership.SplitBrainResolver.LeaseMajority.LeaseImplementation }),
	stringKey("cluster.split-brain-resolver.lease-majority.lease-name", "the lease's name (default <cluster-name>-shardmesh-sbr)", func(c *Config) *string { return &c.Membership.SplitBrainResolver.LeaseMajority.LeaseName }),
	durationKey("cluster.split-brain-resolver.lease-majority.acquire-lease-delay-for-minority", "how long the minority side waits before it tries to acquire the lease (default 2s)", 0, func(c *Config) *time.Duration {
		return &c.Membership.SplitBrainResolver.LeaseMajority.AcquireLeaseDelayForMinority
	}),
	durationKey("cluster.split-brain-resolver.lease-majority.release-after", "how long the lease is kept after the members downed were removed (default 40s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Membership.SplitBrainResolver.LeaseMajority.ReleaseAfter }),
	durationKey("cluster.split-brain-resolver.lease-majority.lease-operation-timeout", "without an answer from the lease within this, the decision is reversed (default 5s; less than down-removal-margin)", time.Millisecond, func(c *Config) *time.Duration {
		return &c.Membership.SplitBrainResolver.LeaseMajority.LeaseOperationTimeout
	}),
	stringKey("cluster.split-brain-resolver.lease-majority.role", "count only members with this role to pick the side that waits (default all)", func(c *Config) *string { return &c.Membership.SplitBrainResolver.Role }),
	intKey("cluster.voters", "how many of the oldest Up members grant the serving lease and decide keep-majority (default 5)", 1, 1000, func(c *Config) *int { return &c.Membership.Voters }),
	intKey("cluster.failure-detector.monitored-by-nr-of-members", "how many members watch each member, on a ring (default 9)", 1, 1000, func(c *Config) *int { return &c.Membership.FailureDetector.MonitoredByNrOfMembers }),
	onOffDurationKey("cluster.allow-weakly-up-members", "after this without convergence the leader moves joining members to WeaklyUp (off, or a duration; default 7s)", func(c *Config) *time.Duration { return &c.Membership.AllowWeaklyUpMembers }),

	intKey("sharding.number-of-shards", "shards of the default extractor; must be equal on every member (default 1000)", 1, 1<<20, func(c *Config) *int { return &c.Sharding.NumberOfShards }),
	stringKey("sharding.role", "entities run on members with this role; the others proxy (default: every member)", func(c *Config) *string { return &c.Sharding.Role }),
	durationKey("sharding.retry-interval", "how often unanswered registrations and home requests are repeated (default 2s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Sharding.RetryInterval }),
	intKey("sharding.buffer-size", "messages a region buffers while shard homes are unknown; beyond it senders wait, nothing is dropped (default 100000)", 1, math.MaxInt32, func(c *Config) *int { return &c.Sharding.BufferSize }),
	durationKey("sharding.handoff-timeout", "bound of a handoff; entities are stopped by force 5s before (default 60s)", time.Second, func(c *Config) *time.Duration { return &c.Sharding.HandoffTimeout }),
	durationKey("sharding.shard-start-timeout", "how long a region has to confirm a new shard (default 10s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Sharding.ShardStartTimeout }),
	durationKey("sharding.rebalance-interval", "how often the allocation strategy is asked to rebalance (default 10s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Sharding.RebalanceInterval }),
	durationKey("sharding.waiting-for-state-timeout", "how often a recovering coordinator asks a member again (default 2s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Sharding.WaitingForStateTimeout }),
	durationKey("sharding.shard-region-query-timeout", "bound of the answers to stats and region-state queries (default 3s)", time.Millisecond, func(c *Config) *time.Duration { return &c.Sharding.ShardRegionQueryTimeout }),
	enumKey("sharding.allocation-strategy", "how shards are placed: least-shard, consistent-hashing, or external (a shard stays where it was first asked for unless pinned) (default least-shard)", func(c *Config) *string { return &c.Sharding.AllocationStrategy }, "least-shard", "consistent-hashing", "external"),
	intKey("sharding.least-shard-allocation-strategy.rebalance-absolute-limit", "most shards moved per rebalance round by the new algorithm; 0 selects the old one (default 0)", 0, math.MaxInt32, func(c *Config) *int { return &c.Sharding.LeastShard.RebalanceAbsoluteLimit }),
	floatKey("sharding.least-shard-allocation-strategy.rebalance-relative-limit", "most shards moved per round by the new algorithm, as a fraction of all shards (default 0.1)", 0.000001, 1, func(c *Config) *float64 { return &c.Sharding.LeastShard.RebalanceRelativeLimit }),
	intKey("sharding.least-shard-allocation-strategy.rebalance-threshold", "old algorithm: difference that starts a rebalance (default 1)", 1, math.MaxInt32, func(c *Config) *int { return &c.Sharding.LeastShard.RebalanceThreshold }),
	intKey("sharding.least-shard-allocation-strategy.max-simultaneous-rebalance", "old algorithm: handoffs in progress at a time (default 3)", 1, math.MaxInt32, func(c *Config) *int { return &c.Sharding.LeastShard.MaxSimultaneousRebalance }),
	boolKey("sharding.least-shard-allocation-strategy.rolling-update-moves", "during a rolling update, move shards off older app versions onto the newest, up to each one's share (default on; off: Akka, no rebalance while versions are mixed)", func(c *Config) *bool { return &c.Sharding.LeastShard.RollingUpdateMoves }),
	boolKey("sharding.least-shard-allocation-strategy.skip-difference-of-one", "never move a shard for a difference of one, as Shardcake (default off)", func(c *Config) *bool { return &c.Sharding.LeastShard.SkipDifferenceOfOne }),
	intKey("sharding.consistent-hashing-allocation-strategy.rebalance-limit", "most shards moved per round by consistent hashing; 0 for no limit (default 0)", 0, math.MaxInt32, func(c *Config) *int { return &c.Sharding.ConsistentHashing.RebalanceLimit }),
	intKey("sharding.consistent-hashing-allocation-strategy.virtual-nodes-factor", "virtual nodes per member on the hash ring (default 100)", 1, 10000, func(c *Config) *int { return &c.Sharding.ConsistentHashing.VirtualNodes }),
	passivationKey("sharding.passivation.strategy", "automatic passivation: default-idle-strategy (stop entities idle for 120s), default-strategy (Window-TinyLFU, 100000 active entities per region), a strategy block of your own under sharding.passivation, or none (default default-idle-strategy)"),
	passivationKey("sharding.passivation.default-idle-strategy.idle-entity.timeout", "idle time after which default-idle-strategy stops an entity (default 120s)"),
	passivationKey("sharding.passivation.default-strategy.active-entity-limit", "active entities per region with default-strategy (default 100000)"),
	passivationKey("sharding.passivation.default-strategy.idle-entity.timeout", "idle time after which default-strategy also stops an entity (default none)"),
}

// lookup finds the key at path.
func lookup(path string) (Key, bool) {
	for _, k := range Schema {
		if k.Path == path {
			return k, true
		}
	}
	if k, ok := roleMinKey(path); ok {
		return k, true
	}
	return anyPassivationKey(path)
}
