// Package simulator replays entity access traces through the real passivation policies,
// the way Akka's passivation simulator does, and measures the active rate: the share of
// accesses that found their entity already active (a cache hit rate). Its figures are
// comparable with those Akka publishes for the same traces.
//
// Like Akka's simulator, it maps each entity id to a shard with the default extractor
// (Java's String.hashCode of the id, modulo the number of shards), allocates each shard on
// its first access to the region with the fewest shards (the lowest-numbered on a tie), and
// divides each region's active-entity limit evenly among the shards active in it so far:
// when a shard becomes active, every shard of its region gets its new share at once.
//
// Two details differ from Akka's simulator, neither visible in its published figures: the
// shard of an id is shard.HashCodeExtractor's abs(hashCode) % n where Akka's simulator
// computes abs(hashCode % n), which differ only for ids whose Java hash code is
// Integer.MIN_VALUE; and trace lines are trimmed and blank lines skipped, where Akka takes
// lines verbatim (it counts the blank last line of gli.trace as an access to the id "",
// 6,016 accesses against 6,015 here).
package simulator

import (
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/shard"
)

// Config describes one simulation run.
type Config struct {
	// Settings is the passivation strategy; its ActiveEntityLimit is per region.
	Settings passivation.Settings
	// Regions is the number of shard regions (cluster members), at least 1.
	Regions int
	// Shards is the number of shards, at least 1.
	Shards int
	// Tick is the virtual time between two accesses, which idle timeouts are measured in;
	// 0 means one millisecond.
	Tick time.Duration
}

// Stats counts what happened in a run.
type Stats struct {
	// Accesses is the number of messages routed to entities.
	Accesses int64
	// Activations is the number of accesses that found their entity passive (misses).
	Activations int64
	// Passivations is the number of entities passivated, by limit or idle timeout.
	Passivations int64
}

// ActiveRate returns the percentage of accesses that found their entity active.
func (s Stats) ActiveRate() float64 {
	if s.Accesses == 0 {
		return 0
	}
	return 100 * float64(s.Accesses-s.Activations) / float64(s.Accesses)
}

// Simulator is a running simulation: feed it accesses, read its stats.
type Simulator struct {
	cfg       Config
	extractor *shard.HashCodeExtractor
	regions   []*passivation.Region[string]
	shards    []int            // shards allocated per region
	location  map[shard.ID]int // region of each allocated shard
	stats     Stats
	now       time.Time
	interval  time.Duration // idle sweep interval, 0 without idle passivation
	nextSweep time.Time
	out       []string
	passive   []passivation.Passivate[string]
}

// New returns a simulator for the given run.
func New(cfg Config) (*Simulator, error) {
	if cfg.Regions < 1 {
		return nil, fmt.Errorf("regions = %d: must be at least 1", cfg.Regions)
	}
	extractor, err := shard.NewHashCodeExtractor(cfg.Shards)
	if err != nil {
		return nil, err
	}
	if cfg.Tick == 0 {
		cfg.Tick = time.Millisecond
	}
	if cfg.Tick < 0 {
		return nil, fmt.Errorf("tick = %s: must be positive", cfg.Tick)
	}
	s := &Simulator{
		cfg:       cfg,
		extractor: extractor,
		shards:    make([]int, cfg.Regions),
		location:  make(map[shard.ID]int),
		now:       time.Unix(0, 0).UTC(),
		interval:  cfg.Settings.Idle.CheckInterval(),
	}
	s.nextSweep = s.now.Add(s.interval)
	for range cfg.Regions {
		r, err := passivation.NewRegion(cfg.Settings, passivation.StringHash[string])
		if err != nil {
			return nil, err
		}
		s.regions = append(s.regions, r)
	}
	return s, nil
}

// Access routes one message to entity id.
func (s *Simulator) Access(id string) {
	s.now = s.now.Add(s.cfg.Tick)
	shardID := s.extractor.ShardID(shard.EntityID(id))
	r, ok := s.location[shardID]
	if !ok {
		r = s.allocate(shardID)
	}
	region := s.regions[r]
	p := region.Shard(shardID)
	if p == nil {
		p, s.passive = region.StartShard(shardID, s.passive[:0])
		s.stats.Passivations += int64(len(s.passive))
	}
	s.stats.Accesses++
	if !p.Contains(id) {
		s.stats.Activations++
	}
	s.out = p.Access(id, s.now, s.out[:0])
	s.stats.Passivations += int64(len(s.out))
	if s.interval > 0 && !s.now.Before(s.nextSweep) {
		s.sweep()
	}
}

// allocate places a new shard on the region with the fewest shards, the first on a tie,
// as Akka's simulator does.
func (s *Simulator) allocate(id shard.ID) int {
	best := 0
	for r, n := range s.shards {
		if n < s.shards[best] {
			best = r
		}
	}
	s.shards[best]++
	s.location[id] = best
	return best
}

func (s *Simulator) sweep() {
	for id, r := range s.location {
		if p := s.regions[r].Shard(id); p != nil {
			s.out = p.Sweep(s.now, s.out[:0])
			s.stats.Passivations += int64(len(s.out))
		}
	}
	s.nextSweep = s.now.Add(s.interval)
}

// Stats returns the counts so far.
func (s *Simulator) Stats() Stats { return s.stats }

// Run replays the accesses of a trace through a new simulator and returns its stats.
func Run(cfg Config, ids []string) (Stats, error) {
	s, err := New(cfg)
	if err != nil {
		return Stats{}, err
	}
	for _, id := range ids {
		s.Access(id)
	}
	return s.Stats(), nil
}
