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

// Simulator is a running simulation: feed it accesses, read its stats. It works on dense
// entity indexes (a Trace's): the strings of the ids are hashed and mapped to shards once
// per distinct id, never per access, so replaying millions of accesses is bound by the
// passivation policies themselves.
type Simulator struct {
	cfg       Config
	extractor *shard.HashCodeExtractor
	regions   []*passivation.Region[uint32]
	shards    []int // shards allocated per region

	// Per distinct entity (its index): its id, the hash the frequency sketch counts, its
	// shard (an index into the per-shard slices; -1 until first accessed).
	ids     []string
	hashes  []uint32
	idShard []int32
	known   map[string]uint32 // index of each id given to Access as a string

	// Per shard, in the order of first access: its id, its region, its policy.
	shardIDs    []shard.ID
	shardOf     map[shard.ID]int32
	shardRegion []int
	policies    []*passivation.Policy[uint32]

	stats     Stats
	now       time.Time
	interval  time.Duration // idle sweep interval, 0 without idle passivation
	nextSweep time.Time
	out       []uint32
	passive   []passivation.Passivate[uint32]
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
		shardOf:   map[shard.ID]int32{},
		now:       time.Unix(0, 0).UTC(),
		interval:  cfg.Settings.Idle.CheckInterval(),
	}
	s.nextSweep = s.now.Add(s.interval)
	hash := func(i uint32) uint32 { return s.hashes[i] }
	for range cfg.Regions {
		r, err := passivation.NewRegion(cfg.Settings, hash)
		if err != nil {
			return nil, err
		}
		s.regions = append(s.regions, r)
	}
	return s, nil
}

// add makes id the entity of the next index.
func (s *Simulator) add(id string) uint32 {
	s.ids = append(s.ids, id)
	s.hashes = append(s.hashes, passivation.StringHash(id))
	s.idShard = append(s.idShard, -1)
	return uint32(len(s.ids) - 1)
}

// Access routes one message to entity id.
func (s *Simulator) Access(id string) {
	if s.known == nil {
		s.known = map[string]uint32{}
		for i, x := range s.ids {
			s.known[x] = uint32(i)
		}
	}
	i, ok := s.known[id]
	if !ok {
		i = s.add(id)
		s.known[id] = i
	}
	s.access(i)
}

// access routes one message to the entity of index i.
func (s *Simulator) access(i uint32) {
	s.now = s.now.Add(s.cfg.Tick)
	sh := s.idShard[i]
	if sh < 0 {
		sh = s.shardOfID(i)
	}
	p := s.policies[sh]
	if p == nil {
		p = s.startShard(sh)
	}
	s.stats.Accesses++
	if !p.Contains(i) {
		s.stats.Activations++
	}
	s.out = p.Access(i, s.now, s.out[:0])
	s.stats.Passivations += int64(len(s.out))
	if s.interval > 0 && !s.now.Before(s.nextSweep) {
		s.sweep()
	}
}

// shardOfID maps entity i to its shard (once per entity), numbering shards as they come.
func (s *Simulator) shardOfID(i uint32) int32 {
	id := s.extractor.ShardID(shard.EntityID(s.ids[i]))
	sh, ok := s.shardOf[id]
	if !ok {
		sh = int32(len(s.shardIDs))
		s.shardOf[id] = sh
		s.shardIDs = append(s.shardIDs, id)
		s.shardRegion = append(s.shardRegion, -1)
		s.policies = append(s.policies, nil)
	}
	s.idShard[i] = sh
	return sh
}

// startShard allocates shard sh on its first access to the region with the fewest shards,
// the first on a tie, as Akka's simulator does, and starts it there.
func (s *Simulator) startShard(sh int32) *passivation.Policy[uint32] {
	best := 0
	for r, n := range s.shards {
		if n < s.shards[best] {
			best = r
		}
	}
	s.shards[best]++
	var p *passivation.Policy[uint32]
	p, s.passive = s.regions[best].StartShard(s.shardIDs[sh], s.passive[:0])
	s.stats.Passivations += int64(len(s.passive))
	s.policies[sh], s.shardRegion[sh] = p, best
	return p
}

func (s *Simulator) sweep() {
	for _, p := range s.policies {
		if p != nil {
			s.out = p.Sweep(s.now, s.out[:0])
			s.stats.Passivations += int64(len(s.out))
		}
	}
	s.nextSweep = s.now.Add(s.interval)
}

// active reports whether entity id is active now.
func (s *Simulator) active(id string) bool {
	i, ok := s.known[id]
	if !ok || s.idShard[i] < 0 {
		return false
	}
	p := s.policies[s.idShard[i]]
	return p != nil && p.Contains(i)
}

// Stats returns the counts so far.
func (s *Simulator) Stats() Stats { return s.stats }

// Run replays the accesses of a trace through a new simulator and returns its stats.
func Run(cfg Config, ids []string) (Stats, error) {
	return RunTrace(cfg, NewTrace(ids))
}

// RunTrace replays a trace through a new simulator and returns its stats.
func RunTrace(cfg Config, t *Trace) (Stats, error) {
	s, err := New(cfg)
	if err != nil {
		return Stats{}, err
	}
	for _, id := range t.IDs {
		s.add(id)
	}
	for _, i := range t.Accesses {
		s.access(i)
	}
	return s.Stats(), nil
}
