package engine

import (
	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// TypeFromConfig builds the settings of entity type name from the configuration: role ("" for
// sharding.role), strategy (nil for sharding.allocation-strategy's) and remember (on: remember
// entities whatever sharding.remember-entities says) as the type was registered. The daemon's
// types and the capacity simulator's (`shardctl sim cluster`) are built here.
func TypeFromConfig(cfg config.Config, name, role string, strategy allocation.Strategy, remember bool) (TypeConfig, error) {
	sc := cfg.Sharding
	if role == "" {
		role = sc.Role
	}
	if strategy == nil {
		var err error
		switch sc.AllocationStrategy {
		case "consistent-hashing":
			strategy, err = allocation.NewConsistentHashing(sc.ConsistentHashing)
		case "external":
			strategy = allocation.NewExternal()
		default:
			strategy, err = allocation.NewLeastShard(sc.LeastShard)
		}
		if err != nil {
			return TypeConfig{}, err
		}
	}
	cc := coordinator.DefaultConfig(name)
	cc.Role = role
	// Allocation waits until min-nr-of-members regions (of the role) registered, so the first
	// member to come up does not get every shard.
	cc.MinMembers = max(cfg.Membership.MinNrOfMembers, 1)
	if n, ok := cfg.Membership.RoleMinNrOfMembers[role]; ok && role != "" {
		cc.MinMembers = n
	}
	cc.RebalanceInterval = sc.RebalanceInterval
	cc.HandoffTimeout = sc.HandoffTimeout
	cc.ShardStartTimeout = sc.ShardStartTimeout
	cc.RecoveryTimeout = sc.WaitingForStateTimeout
	cc.Strategy = strategy
	rc := region.DefaultConfig(name)
	rc.Role = role
	rc.BufferSize = sc.BufferSize
	rc.RetryInterval = sc.RetryInterval
	tc := TypeConfig{
		Name: name, Coordinator: cc, Region: rc,
		Shard:       shard.Config{HandoffTimeout: sc.HandoffTimeout},
		Passivation: sc.Passivation,
	}
	if sc.Lease.Use != "" {
		tc.Shard.Lease = shard.Lease{Enabled: true, RetryInterval: sc.Lease.RetryInterval}
	}
	if rm := sc.Remember; rm.Enabled || remember {
		tc.Shard.Remember = shard.Remember{Enabled: true, RestartBackoff: rm.EntityRestartBackoff, FailureBackoff: rm.ShardFailureBackoff}
		switch rm.RecoveryStrategy {
		case "constant":
			tc.Shard.Remember.RecoveryFrequency, tc.Shard.Remember.RecoveryBatch = rm.RecoveryFrequency, rm.RecoveryNumberOfEntities
		case "adaptive":
			a := rm.Adaptive
			tc.Shard.Remember.Adaptive = shard.Adaptive{Enabled: true, InitialRate: a.InitialRate, MaxRate: a.MaxRate, MinRate: a.MinRate,
				TargetLatency: a.TargetLatency, Interval: a.AdjustInterval}
		}
	}
	return tc, nil
}
