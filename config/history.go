package config

import (
	"math"
	"slices"
	"time"
)

// PlacementHistory is how much of the placement history (every allocation change, kept in
// the replicated store) is retained.
type PlacementHistory struct {
	// MaxPerShard is how many records of each shard are kept (0 turns the history off).
	MaxPerShard int
	// Retention is how long a record is kept.
	Retention time.Duration
}

// DefaultPlacementHistory returns the defaults: 50 records per shard, for 7 days.
func DefaultPlacementHistory() PlacementHistory {
	return PlacementHistory{MaxPerShard: 50, Retention: 7 * 24 * time.Hour}
}

func init() {
	at := slices.IndexFunc(Schema, func(k Key) bool { return k.Path == "sharding.handoff-timeout" }) + 1 // after the remember keys, which init inserts there later (file order)
	h := func(c *Config) *PlacementHistory { return &c.Sharding.History }
	Schema = slices.Insert(Schema, at,
		intKey("sharding.placement-history.max-per-shard", "placement history: records kept per shard; 0 turns it off (default 50)", 0, math.MaxInt32,
			func(c *Config) *int { return &h(c).MaxPerShard }),
		durationKey("sharding.placement-history.retention", "placement history: how long a record is kept (default 168h)", time.Minute,
			func(c *Config) *time.Duration { return &h(c).Retention }),
	)
}
