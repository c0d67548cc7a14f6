package config

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Remember is remembered entities (remember-entities and the keys that tune it) and the
// quorums of the replicated store that keeps them and the entities' durable state.
type Remember struct {
	// Enabled is remember-entities: every type remembers its entities (a type may override).
	Enabled bool
	// EntityRestartBackoff, ShardFailureBackoff: entity-restart-backoff, shard-failure-backoff.
	EntityRestartBackoff, ShardFailureBackoff time.Duration
	// RecoveryStrategy is entity-recovery-strategy: "all" or "constant", at
	// RecoveryFrequency and RecoveryNumberOfEntities (entity-recovery-constant-rate-strategy).
	RecoveryStrategy         string
	RecoveryFrequency        time.Duration
	RecoveryNumberOfEntities int
	// Adaptive tunes entity-recovery-strategy = adaptive
	// (entity-recovery-adaptive-strategy.*): a budget of entity starts per second for the
	// whole cluster, from InitialRate between MinRate and MaxRate, that backs off when store
	// rounds or entity starts take longer than TargetLatency and grows while they do not,
	// adjusted every AdjustInterval (see shard.RecoveryBudget).
	Adaptive Adaptive
	// UpdatingStateTimeout bounds one round of the store (updating-state-timeout).
	UpdatingStateTimeout time.Duration
	// WriteMajorityPlus, ReadMajorityPlus (coordinator-state) and MajorityMinCap
	// (distributed-data) are read for Pekko's sake and have no effect: every quorum of the
	// store is a majority of its replica set (Store.ReplicationFactor).
	WriteMajorityPlus, ReadMajorityPlus, MajorityMinCap int
}

// Adaptive is entity-recovery-adaptive-strategy (not in reference.conf: shardmesh's own).
type Adaptive struct {
	InitialRate, MaxRate, MinRate float64 // entity starts per second, cluster-wide
	TargetLatency, AdjustInterval time.Duration
}

// Validate checks that min-rate <= initial-rate <= max-rate.
func (a Adaptive) Validate() error {
	const k = "sharding.entity-recovery-adaptive-strategy."
	if a.MinRate > a.MaxRate {
		return fmt.Errorf("%smin-rate = %v is above %smax-rate = %v: allowed is min-rate <= initial-rate <= max-rate", k, a.MinRate, k, a.MaxRate)
	}
	if a.InitialRate < a.MinRate || a.InitialRate > a.MaxRate {
		return fmt.Errorf("%sinitial-rate = %v is outside [min-rate %v, max-rate %v]: allowed is min-rate <= initial-rate <= max-rate", k, a.InitialRate, a.MinRate, a.MaxRate)
	}
	return nil
}

// DefaultRemember returns reference.conf's defaults.
func DefaultRemember() Remember {
	return Remember{
		EntityRestartBackoff: 10 * time.Second, ShardFailureBackoff: 10 * time.Second,
		RecoveryStrategy: "all", RecoveryFrequency: 100 * time.Millisecond, RecoveryNumberOfEntities: 5,
		Adaptive:             Adaptive{InitialRate: 1000, MaxRate: 100_000, MinRate: 20, TargetLatency: 200 * time.Millisecond, AdjustInterval: 250 * time.Millisecond},
		UpdatingStateTimeout: 5 * time.Second,
		WriteMajorityPlus:    3, ReadMajorityPlus: 5, MajorityMinCap: 5,
	}
}

func init() {
	at := slices.IndexFunc(Schema, func(k Key) bool { return k.Path == "sharding.handoff-timeout" }) + 1
	r := func(c *Config) *Remember { return &c.Sharding.Remember }
	Schema = slices.Insert(Schema, at,
		flagged(boolKey("sharding.remember-entities", "restart every type's entities after a rebalance, a crash or a full-cluster restart; turns automatic passivation off (default off)",
			func(c *Config) *bool { return &r(c).Enabled })),
		durationKey("sharding.entity-restart-backoff", "a remembered entity that stopped without passivating restarts after this, or on its next message (default 10s)", time.Millisecond,
			func(c *Config) *time.Duration { return &r(c).EntityRestartBackoff }),
		durationKey("sharding.shard-failure-backoff", "a shard whose store read or write failed tries again after this; its messages wait (default 10s)", time.Millisecond,
			func(c *Config) *time.Duration { return &r(c).ShardFailureBackoff }),
		enumKey("sharding.entity-recovery-strategy", "how a shard restarts its remembered entities: all at once, constant (a fixed rate per shard), or adaptive (a budget per member that follows store and start latency) (default all)",
			func(c *Config) *string { return &r(c).RecoveryStrategy }, "all", "constant", "adaptive"),
		durationKey("sharding.entity-recovery-constant-rate-strategy.frequency", "constant recovery: a batch every (default 100ms)", time.Millisecond,
			func(c *Config) *time.Duration { return &r(c).RecoveryFrequency }),
		intKey("sharding.entity-recovery-constant-rate-strategy.number-of-entities", "constant recovery: entities per batch (default 5)", 1, math.MaxInt32,
			func(c *Config) *int { return &r(c).RecoveryNumberOfEntities }),
		floatKey("sharding.entity-recovery-adaptive-strategy.initial-rate", "adaptive recovery: entity starts per second, cluster-wide, to begin with, and the additive increase per interval after a back-off (default 1000)", 0.001, 1e9,
			func(c *Config) *float64 { return &r(c).Adaptive.InitialRate }),
		floatKey("sharding.entity-recovery-adaptive-strategy.max-rate", "adaptive recovery: the most entity starts per second, cluster-wide (default 100000)", 0.001, 1e9,
			func(c *Config) *float64 { return &r(c).Adaptive.MaxRate }),
		floatKey("sharding.entity-recovery-adaptive-strategy.min-rate", "adaptive recovery: the budget never backs off below this many starts per second, cluster-wide (default 20)", 0.001, 1e9,
			func(c *Config) *float64 { return &r(c).Adaptive.MinRate }),
		durationKey("sharding.entity-recovery-adaptive-strategy.target-latency", "adaptive recovery: back off when store rounds or entity starts take longer than this on average (default 200ms)", time.Millisecond,
			func(c *Config) *time.Duration { return &r(c).Adaptive.TargetLatency }),
		durationKey("sharding.entity-recovery-adaptive-strategy.adjust-interval", "adaptive recovery: how often the budget changes its rate (default 250ms)", 10*time.Millisecond,
			func(c *Config) *time.Duration { return &r(c).Adaptive.AdjustInterval }),
		durationKey("sharding.updating-state-timeout", "bound of one store round: a write or read of remembered entities or entity state (default 5s)", time.Millisecond,
			func(c *Config) *time.Duration { return &r(c).UpdatingStateTimeout }),
		intKey("sharding.coordinator-state.write-majority-plus", "no effect since replica sets: every quorum is a majority of its replica set (see sharding.store.replication-factor); kept so that Pekko configurations load", 0, math.MaxInt32,
			func(c *Config) *int { return &r(c).WriteMajorityPlus }),
		intKey("sharding.coordinator-state.read-majority-plus", "no effect since replica sets: every quorum is a majority of its replica set (see sharding.store.replication-factor); kept so that Pekko configurations load", 0, math.MaxInt32,
			func(c *Config) *int { return &r(c).ReadMajorityPlus }),
		intKey("sharding.distributed-data.majority-min-cap", "no effect since replica sets: every quorum is a majority of its replica set (see sharding.store.replication-factor); kept so that Pekko configurations load", 1, math.MaxInt32,
			func(c *Config) *int { return &r(c).MajorityMinCap }),
	)
}
