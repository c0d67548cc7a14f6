package allocation

import (
	"errors"
	"fmt"
)

// LeastShardConfig configures LeastShard. Keys and defaults follow reference.conf's
// akka.cluster.sharding.least-shard-allocation-strategy; the key of each field is in
// parentheses.
type LeastShardConfig struct {
	// RebalanceAbsoluteLimit is the most shards rebalanced in one round by the new algorithm
	// (rebalance-absolute-limit). Zero selects the old algorithm, as in Akka. Default 0.
	RebalanceAbsoluteLimit int
	// RebalanceRelativeLimit is the most shards rebalanced in one round by the new algorithm,
	// as a fraction of all shards (rebalance-relative-limit); the lower of the two limits
	// applies, and at least one shard moves. Zero means the default, 0.1.
	RebalanceRelativeLimit float64
	// RebalanceThreshold is, for the old algorithm, by how many shards the region holding
	// the most (not in progress) must exceed the most suitable region, usually the one with
	// the fewest, before a rebalance starts (difference > threshold); it also caps the shards
	// picked per round (rebalance-threshold). Zero means the default, 1.
	RebalanceThreshold int
	// MaxSimultaneousRebalance is, for the old algorithm, the most handoffs in progress at a
	// time (max-simultaneous-rebalance). Zero means the default, 3.
	MaxSimultaneousRebalance int
	// SkipDifferenceOfOne is Shardcake's rule: never move a shard to a region that holds only
	// one shard fewer than the region it leaves (the move would only swap which of them has
	// the extra shard) nor back to the region it leaves (skip-difference-of-one). Not in Akka,
	// hence off by default; shardmesh's daemon turns it on. Default false.
	SkipDifferenceOfOne bool
	// RollingUpdateMoves: while regions run different app versions (a rolling update), move
	// shards off the older versions onto regions of the newest one, up to the balanced share
	// of each and the round limit, rather than not rebalancing at all as Akka does
	// (rolling-update-moves). Every shard moves once per update and the new members take
	// their share at once. Not in Akka, hence off here; shardmesh's configuration turns it on.
	RollingUpdateMoves bool
}

// DefaultLeastShardConfig returns reference.conf's defaults: the old algorithm with
// rebalance-threshold 1 and max-simultaneous-rebalance 3.
func DefaultLeastShardConfig() LeastShardConfig {
	return LeastShardConfig{
		RebalanceAbsoluteLimit:   0,
		RebalanceRelativeLimit:   0.1,
		RebalanceThreshold:       1,
		MaxSimultaneousRebalance: 3,
	}
}

const leastShardKey = "least-shard-allocation-strategy."

// Validate fills zero values with defaults and rejects nonsense, naming the key.
func (c *LeastShardConfig) Validate() error {
	d := DefaultLeastShardConfig()
	if c.RebalanceRelativeLimit == 0 {
		c.RebalanceRelativeLimit = d.RebalanceRelativeLimit
	}
	if c.RebalanceThreshold == 0 {
		c.RebalanceThreshold = d.RebalanceThreshold
	}
	if c.MaxSimultaneousRebalance == 0 {
		c.MaxSimultaneousRebalance = d.MaxSimultaneousRebalance
	}
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(leastShardKey+format, args...))
		}
	}
	check(c.RebalanceAbsoluteLimit >= 0, "rebalance-absolute-limit = %d: must not be negative (0 selects the old algorithm)", c.RebalanceAbsoluteLimit)
	// The negated form also rejects NaN.
	check(c.RebalanceRelativeLimit > 0 && c.RebalanceRelativeLimit <= 1, "rebalance-relative-limit = %g: must be a fraction in (0, 1]", c.RebalanceRelativeLimit)
	check(c.RebalanceThreshold >= 1, "rebalance-threshold = %d: must be at least 1", c.RebalanceThreshold)
	check(c.MaxSimultaneousRebalance >= 1, "max-simultaneous-rebalance = %d: must be at least 1", c.MaxSimultaneousRebalance)
	return errors.Join(errs...)
}

// ConsistentHashingConfig configures ConsistentHashing. Akka takes the rebalance limit as a
// constructor argument and has no reference.conf block for this strategy; the keys in
// parentheses are shardmesh's.
type ConsistentHashingConfig struct {
	// RebalanceLimit is the most shards rebalanced in one round; 0 means no limit
	// (consistent-hashing-allocation-strategy.rebalance-limit). Default 0, which Akka also
	// reads as no limit.
	RebalanceLimit int
	// VirtualNodes is the number of points each member has on the hash ring
	// (consistent-hashing-allocation-strategy.virtual-nodes-factor). More points spread the
	// shards more evenly (the spread of a member's share shrinks as 1/√VirtualNodes) at the
	// cost of a larger ring. Zero means the default, 100; Akka uses 10.
	VirtualNodes int
}

// DefaultConsistentHashingConfig returns the defaults: no rebalance limit, 100 virtual nodes
// per member.
func DefaultConsistentHashingConfig() ConsistentHashingConfig {
	return ConsistentHashingConfig{RebalanceLimit: 0, VirtualNodes: 100}
}

const consistentHashingKey = "consistent-hashing-allocation-strategy."

// maxVirtualNodes bounds the ring: 100 members × 10,000 points is already 1M points.
const maxVirtualNodes = 10_000

// Validate fills zero values with defaults and rejects nonsense, naming the key.
func (c *ConsistentHashingConfig) Validate() error {
	if c.VirtualNodes == 0 {
		c.VirtualNodes = DefaultConsistentHashingConfig().VirtualNodes
	}
	var errs []error
	if c.RebalanceLimit < 0 {
		errs = append(errs, fmt.Errorf(consistentHashingKey+"rebalance-limit = %d: must not be negative (0 means no limit)", c.RebalanceLimit))
	}
	if c.VirtualNodes < 1 || c.VirtualNodes > maxVirtualNodes {
		errs = append(errs, fmt.Errorf(consistentHashingKey+"virtual-nodes-factor = %d: must be in [1, %d]", c.VirtualNodes, maxVirtualNodes))
	}
	return errors.Join(errs...)
}
