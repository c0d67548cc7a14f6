package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/allocation"
)

// Config configures the coordinator of one entity type. Keys and defaults follow
// akka.cluster.sharding.
type Config struct {
	// TypeName is the entity type's name.
	TypeName string
	// Role limits the regions that host shards to members with this role; "" for all.
	Role string
	// MinMembers defers allocation until this many regions (members with the role) have
	// registered (min-nr-of-members, per role). Default 1.
	MinMembers int
	// RebalanceInterval is how often the strategy is asked what to rebalance
	// (rebalance-interval). Default 10 s.
	RebalanceInterval time.Duration
	// HandoffTimeout bounds a handoff (handoff-timeout). Default 60 s.
	HandoffTimeout time.Duration
	// ShardStartTimeout is how long a region has to acknowledge HostShard before it is sent
	// again (shard-start-timeout). Default 10 s.
	ShardStartTimeout time.Duration
	// RecoveryTimeout is how often a recovering coordinator asks a member with the role that
	// has not answered to register (waiting-for-state-timeout). Default 2 s.
	RecoveryTimeout time.Duration
	// Strategy allocates and rebalances shards. Default: allocation.NewLeastShard with its
	// defaults.
	Strategy allocation.Strategy
	// RememberEntities (remember-entities = on): the shards that hold remembered entities are
	// allocated without waiting for a message — those in the store when the coordinator
	// starts (LoadShards), and those of a region that terminated.
	RememberEntities bool
	// DurableShards: shards that hold durable records of their own (reminders) mark
	// themselves in the store as remembered shards, and must run without waiting for a
	// message. The coordinator reads the remembered shards when it starts and again after a
	// region with shards terminated, and allocates those without a home. (RememberEntities
	// implies it.)
	DurableShards bool
	// AwaitDirectives: serve nothing until SetDirectives is called once (a member whose
	// operator directives live in the replicated store sets it, so that a new coordinator
	// never acts against a pin or a stopped type it has not read yet). Without it the
	// coordinator starts with no directives.
	AwaitDirectives bool
	// DurableTerm: serve nothing until SetTerm gives the term to issue epochs in. A member
	// whose entities' state is fenced by allocation epochs in the replicated store sets it:
	// the term then comes from the store and grows across full-cluster restarts, where
	// up-numbers start again from 1. Without it the term is the member's up-number.
	DurableTerm bool
}

// DefaultConfig returns Akka's defaults for an entity type.
func DefaultConfig(typeName string) Config {
	return Config{
		TypeName:          typeName,
		MinMembers:        1,
		RebalanceInterval: 10 * time.Second,
		HandoffTimeout:    60 * time.Second,
		ShardStartTimeout: 10 * time.Second,
		RecoveryTimeout:   2 * time.Second,
	}
}

// Validate fills zero values with defaults and rejects nonsense.
func (c *Config) Validate() error {
	d := DefaultConfig(c.TypeName)
	if c.MinMembers == 0 {
		c.MinMembers = d.MinMembers
	}
	if c.RebalanceInterval == 0 {
		c.RebalanceInterval = d.RebalanceInterval
	}
	if c.HandoffTimeout == 0 {
		c.HandoffTimeout = d.HandoffTimeout
	}
	if c.ShardStartTimeout == 0 {
		c.ShardStartTimeout = d.ShardStartTimeout
	}
	if c.RecoveryTimeout == 0 {
		c.RecoveryTimeout = d.RecoveryTimeout
	}
	var errs []error
	if c.Strategy == nil {
		s, err := allocation.NewLeastShard(allocation.DefaultLeastShardConfig())
		if err != nil {
			errs = append(errs, err)
		}
		c.Strategy = s
	}
	if c.TypeName == "" {
		errs = append(errs, errors.New("entity type name is empty"))
	}
	if c.MinMembers < 1 {
		errs = append(errs, fmt.Errorf("min-nr-of-members = %d: must be at least 1", c.MinMembers))
	}
	for name, d := range map[string]time.Duration{
		"rebalance-interval": c.RebalanceInterval, "handoff-timeout": c.HandoffTimeout,
		"shard-start-timeout": c.ShardStartTimeout, "waiting-for-state-timeout": c.RecoveryTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s = %s: must be positive", name, d))
		}
	}
	return errors.Join(errs...)
}
