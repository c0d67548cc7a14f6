package config

import (
	"slices"
	"time"
)

// Lease is the per-shard lease (use-lease, lease-retry-interval) and the built-in store
// lease's timing.
type Lease struct {
	// Use is use-lease: "" for none, "store" for the lease kept in the replicated store, or
	// the name of a lease provider given to shardmesh.Start with WithLease.
	Use string
	// RetryInterval is lease-retry-interval.
	RetryInterval time.Duration
	// HeartbeatTimeout and HeartbeatInterval time the store lease (store-lease.*).
	HeartbeatTimeout, HeartbeatInterval time.Duration
}

// DefaultLease returns the defaults: no lease; retry 5 s; a store lease lasts 20 s and is
// renewed every 2 s.
func DefaultLease() Lease {
	return Lease{RetryInterval: 5 * time.Second, HeartbeatTimeout: 20 * time.Second, HeartbeatInterval: 2 * time.Second}
}

func init() {
	at := slices.IndexFunc(Schema, func(k Key) bool { return k.Path == "sharding.handoff-timeout" }) + 1
	l := func(c *Config) *Lease { return &c.Sharding.Lease }
	Schema = slices.Insert(Schema, at,
		stringKey("sharding.use-lease", `a lease each shard must hold before it creates entities: "store" (kept in the replicated store) or the name of a provider given with shardmesh.WithLease (default: none)`,
			func(c *Config) *string { return &l(c).Use }),
		durationKey("sharding.lease-retry-interval", "how often a shard tries again to acquire its lease (default 5s)", time.Millisecond,
			func(c *Config) *time.Duration { return &l(c).RetryInterval }),
		durationKey("sharding.store-lease.heartbeat-timeout", "the store lease lasts this long without renewal (default 20s)", time.Millisecond,
			func(c *Config) *time.Duration { return &l(c).HeartbeatTimeout }),
		durationKey("sharding.store-lease.heartbeat-interval", "the store lease's holder renews it this often (default 2s)", time.Millisecond,
			func(c *Config) *time.Duration { return &l(c).HeartbeatInterval }),
	)
}
