package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// The capacity simulator: what a cluster of N members costs and how fast it reacts, from the
// members' real runtimes (node.Core: membership and sharding; with an entity type, each
// member's replicated store) under the operator's own configuration, in virtual time
// (`shardctl sim cluster`).
//
// A run starts the members in batches (the first forms the cluster, the others join through
// the first few, as seed nodes), waits until every member is Up in one view, touches every
// shard once so that all are allocated, and measures the traffic of the idle cluster. Then
// it injects the faults asked for, one after another, each once the one before has settled:
// kill -9 of K members, a partition cutting P members off, a pause (SIGSTOP) of one member.

// CapacityOptions configures RunCapacity.
type CapacityOptions struct {
	// Members is how many members to start.
	Members int
	// Membership is every member's membership configuration (validated by RunCapacity).
	Membership membership.Config
	// Type is the entity type every member runs; nil for membership alone.
	Type *engine.TypeConfig
	// Shards is how many shards Type's extractor maps entities to (default 1000).
	Shards int
	// Seeds is how many of the first members the others join through (default 3).
	Seeds int
	// Batch members start at once, every BatchInterval (default 100 every 1 s).
	Batch         int
	BatchInterval time.Duration
	// Measure is how long the idle cluster's traffic is measured (default 30 s).
	Measure time.Duration
	// Kill is how many members to kill -9 (0: none).
	Kill int
	// Partition is how many members to cut off from the others (0: none).
	Partition int
	// Pause is how long to pause one member (0: none).
	Pause time.Duration
	// Limit bounds each phase in virtual time (default 10 min).
	Limit time.Duration
	// Seed seeds every random choice.
	Seed uint64
	// Progress, if set, hears what the run is doing (for a long run).
	Progress func(string)
}

func (o *CapacityOptions) defaults() error {
	if o.Members < 1 {
		return fmt.Errorf("members = %d: at least 1", o.Members)
	}
	if o.Shards == 0 {
		o.Shards = 1000
	}
	if o.Seeds == 0 {
		o.Seeds = 3
	}
	o.Seeds = min(o.Seeds, o.Members)
	if o.Batch == 0 {
		o.Batch = 100
	}
	if o.BatchInterval == 0 {
		o.BatchInterval = time.Second
	}
	if o.Measure == 0 {
		o.Measure = 30 * time.Second
	}
	if o.Limit == 0 {
		o.Limit = 10 * time.Minute
	}
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(o.Shards >= 1, "shards = %d: at least 1", o.Shards)
	check(o.Batch >= 1, "batch = %d: at least 1", o.Batch)
	check(o.BatchInterval > 0, "batch interval = %s: must be positive", o.BatchInterval)
	check(o.Measure > 0, "measure = %s: must be positive", o.Measure)
	check(o.Kill >= 0 && o.Kill < o.Members, "kill = %d: between 0 and members-1 (%d)", o.Kill, o.Members-1)
	check(o.Partition == 0 || (o.Partition > 0 && o.Partition < o.Members-o.Kill), "partition = %d: between 0 and the members left after the kill (%d), less one", o.Partition, o.Members-o.Kill)
	check(o.Pause >= 0, "pause = %s: must not be negative", o.Pause)
	check(o.Pause == 0 || o.Members-o.Kill-o.Partition >= 2, "pause: needs 2 members left after the kill and the partition")
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// CapacityReport is what RunCapacity found. Times are seconds of virtual time; rates are per
// member and second of virtual time, averaged over every member (the busiest member is
// named apart: a voter or the leader exchanges heartbeats with every member). The busiest
// member's traffic counts membership, sharding and the store together.
type CapacityReport struct {
	Members int `json:"members"`
	Shards  int `json:"shards,omitempty"`
	Voters  int `json:"voters"`

	// ConvergedS is from the first start until every member is Up in one view;
	// AfterLastStartS from the last member's start.
	ConvergedS      float64 `json:"converged_s"`
	AfterLastStartS float64 `json:"converged_after_last_start_s"`
	// StartToUp is how long members took from their start to Up (their own view).
	StartToUp Spread `json:"start_to_up_s"`
	// ShardsAllocatedS is from convergence until every shard, touched once, runs somewhere.
	ShardsAllocatedS float64 `json:"shards_allocated_s,omitempty"`

	// The idle cluster, measured for MeasuredS.
	MeasuredS                    float64 `json:"measured_s"`
	MembershipBytesPerMemberPerS float64 `json:"membership_bytes_per_member_per_s"`
	MembershipMsgsPerMemberPerS  float64 `json:"membership_messages_per_member_per_s"`
	ShardingBytesPerMemberPerS   float64 `json:"sharding_bytes_per_member_per_s"`
	ShardingMsgsPerMemberPerS    float64 `json:"sharding_messages_per_member_per_s"`
	// The replicated store's traffic (with an entity type only): the members' reads of
	// the operator's directives, anti-entropy, coordinator state.
	StoreBytesPerMemberPerS float64 `json:"store_bytes_per_member_per_s"`
	StoreMsgsPerMemberPerS  float64 `json:"store_messages_per_member_per_s"`
	BusiestMember           string  `json:"busiest_member"`
	BusiestBytesPerS        float64 `json:"busiest_member_bytes_per_s"`
	BusiestMsgsPerS         float64 `json:"busiest_member_messages_per_s"`
	// ColdStartMembershipBytesPerMember is what a member sent, on average, from the first
	// start until convergence (its join, the gossip of every other join).
	ColdStartMembershipBytesPerMember float64 `json:"cold_start_membership_bytes_per_member"`
	// Kinds is the idle traffic by message kind, per member and second.
	Kinds map[string]Rate `json:"kinds"`
	// IdleCPUPerMember is the CPU time this process spent simulating the idle cluster, per
	// member and second of virtual time: what one member's machines cost (with the
	// simulator's share), to compare across cluster sizes.
	IdleCPUPerMember time.Duration `json:"idle_cpu_per_member_per_virtual_s_ns"`

	Kill      *KillReport      `json:"kill,omitempty"`
	Partition *PartitionReport `json:"partition,omitempty"`
	Pause     *PauseReport     `json:"pause,omitempty"`
	// RemovedAfterKillS repeats Kill.RemovedS, as scripts ask for it.
	RemovedAfterKillS *float64 `json:"removed_after_kill_s,omitempty"`

	VirtualS float64 `json:"virtual_s"`
	WallS    float64 `json:"wall_s"`
	Messages int     `json:"messages_delivered"`
}

// Rate is messages and bytes per member and second.
type Rate struct {
	Messages float64 `json:"messages"`
	Bytes    float64 `json:"bytes"`
}

// Spread sums up a set of durations, in seconds.
type Spread struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func spreadOf(ds []time.Duration) Spread {
	if len(ds) == 0 {
		return Spread{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 { return ds[min(len(ds)-1, int(q*float64(len(ds))))].Seconds() }
	return Spread{P50: at(0.5), P99: at(0.99), Max: ds[len(ds)-1].Seconds()}
}

// KillReport is what a kill -9 of Members members did.
type KillReport struct {
	Members int `json:"members"`
	// DetectedS: the first member marks one of them unreachable. DownedS: every live member
	// has all of them Down (or Removed). RemovedS: every live member has them Removed.
	DetectedS float64 `json:"detected_s"`
	DownedS   float64 `json:"downed_s"`
	RemovedS  float64 `json:"removed_s"`
	// BoundS is the bound removal is held to: detection + stable-after + down-removal-margin
	// (none with keep-majority, the default) + 2 s.
	BoundS float64 `json:"bound_s"`
	// FailoverS: every shard they hosted runs on a live member again (messages to those
	// shards are sent every second, as traffic would).
	FailoverS    float64 `json:"failover_s,omitempty"`
	ShardsOnDead int     `json:"shards_moved,omitempty"`
}

// PartitionReport is what cutting Members members off did.
type PartitionReport struct {
	Members   int     `json:"members"`
	DetectedS float64 `json:"detected_s"`
	// ResolvedS: one side runs (the other stopped) and has removed the other.
	ResolvedS float64 `json:"resolved_s"`
	// Kept is how many members run after it; the cut-off side keeps running only if it held
	// the voters' majority.
	Kept      int     `json:"kept_members"`
	FailoverS float64 `json:"failover_s,omitempty"`
}

// PauseReport is what pausing one member for PausedS did.
type PauseReport struct {
	PausedS float64 `json:"paused_s"`
	// Removed: the others removed it meanwhile (after RemovedS); Outcome is what the member
	// did once resumed.
	Removed  bool    `json:"removed"`
	RemovedS float64 `json:"removed_s,omitempty"`
	Outcome  string  `json:"outcome"`
}

// capacityRun is one run's state.
type capacityRun struct {
	o       CapacityOptions
	s       *Sim
	r       *rand.Rand
	rep     *CapacityReport
	typ     string
	touch   map[shard.ID]shard.EntityID // an entity of every shard
	started map[int]time.Time           // when each member's process started
}

// step is how often a run looks at the cluster: the resolution of its times.
const step = 50 * time.Millisecond

// RunCapacity runs a capacity simulation. It returns an error for invalid options, a phase
// that does not finish within Limit, or a broken invariant.
func RunCapacity(o CapacityOptions) (*CapacityReport, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if err := o.Membership.Validate(); err != nil {
		return nil, err
	}
	opts := Options{Seed: o.Seed, Membership: o.Membership, NumberOfShards: o.Shards, NodeName: RealNames(o.Seed), Quiet: true}
	if o.Type != nil {
		opts.Types = []engine.TypeConfig{*o.Type}
	}
	c := &capacityRun{
		o: o, s: New(opts), r: rand.New(rand.NewPCG(o.Seed, 0xca9ac17)),
		rep:     &CapacityReport{Members: o.Members, Voters: o.Membership.Voters},
		started: map[int]time.Time{},
	}
	if o.Type != nil {
		c.typ, c.rep.Shards = o.Type.Name, o.Shards
	}
	c.s.MeasureTraffic()
	wall := time.Now()
	err := c.run()
	c.rep.VirtualS = c.s.Elapsed().Seconds()
	c.rep.WallS = time.Since(wall).Seconds()
	c.rep.Messages = c.s.Delivered
	if err == nil {
		err = c.s.Err()
	}
	return c.rep, err
}

func (c *capacityRun) progress(format string, args ...any) {
	if c.o.Progress != nil {
		c.o.Progress(fmt.Sprintf("[%7.1fs virtual] ", c.s.Elapsed().Seconds()) + fmt.Sprintf(format, args...))
	}
}

func (c *capacityRun) run() error {
	if err := c.coldStart(); err != nil {
		return err
	}
	if c.typ != "" {
		if err := c.allocateShards(); err != nil {
			return err
		}
	}
	c.measure()
	if c.o.Kill > 0 {
		if err := c.kill(); err != nil {
			return err
		}
	}
	if c.o.Partition > 0 {
		if err := c.partition(); err != nil {
			return err
		}
	}
	if c.o.Pause > 0 {
		if err := c.pause(); err != nil {
			return err
		}
	}
	return nil
}

// until runs the simulation in steps until cond holds; it fails after limit.
func (c *capacityRun) until(what string, limit time.Duration, cond func() bool) error {
	end := c.s.Now().Add(limit)
	next := c.s.Now().Add(10 * time.Second)
	for !cond() {
		if c.s.Err() != nil {
			return c.s.Err()
		}
		if !c.s.Now().Before(end) {
			return fmt.Errorf("%s: not within %v of virtual time", what, limit)
		}
		c.s.RunFor(step)
		if !c.s.Now().Before(next) {
			c.progress("waiting: %s", what)
			next = c.s.Now().Add(10 * time.Second)
		}
	}
	return c.s.Err()
}

func (c *capacityRun) coldStart() error {
	s, o := c.s, c.o
	for range o.Members {
		s.AddNode(nil, "1")
	}
	seeds := make([]int, o.Seeds)
	for i := range seeds {
		seeds[i] = i + 1
	}
	begin := s.Now()
	before := s.Metered()
	upAt := map[int]time.Duration{}
	noteUp := func() {
		for _, n := range s.Nodes() {
			if _, ok := upAt[n.Index]; !ok && n.M != nil && n.M.Self().Status == membership.Up {
				upAt[n.Index] = s.Now().Sub(c.started[n.Index])
			}
		}
	}
	s.Start(1)
	c.started[1] = s.Now()
	next := 2
	for next <= o.Members {
		if next > 2 || o.Members == 1 {
			for end := s.Now().Add(o.BatchInterval); s.Now().Before(end); noteUp() {
				s.RunFor(min(step, end.Sub(s.Now())))
			}
		}
		for end := min(o.Members, next+o.Batch-1); next <= end; next++ {
			var via []int
			for _, sd := range seeds {
				if sd < next {
					via = append(via, sd)
				}
			}
			s.Start(next, via...)
			c.started[next] = s.Now()
		}
		c.progress("started %d of %d members", next-1, o.Members)
		if s.Err() != nil {
			return s.Err()
		}
	}
	lastStart := s.Now()
	err := c.until("every member Up in one view", o.Limit, func() bool {
		noteUp()
		return s.OneView()
	})
	if err != nil {
		return err
	}
	c.rep.ConvergedS = s.Now().Sub(begin).Seconds()
	c.rep.AfterLastStartS = s.Now().Sub(lastStart).Seconds()
	ups := make([]time.Duration, 0, len(upAt))
	for _, d := range upAt {
		ups = append(ups, d)
	}
	c.rep.StartToUp = spreadOf(ups)
	d := s.Metered().Sub(before)
	c.rep.ColdStartMembershipBytesPerMember = float64(d.Membership.Bytes) / float64(o.Members)
	c.progress("every member Up in one view, %.1f s after the last start", c.rep.AfterLastStartS)
	return nil
}

// OneView reports whether every live, unpaused member holds the same view and is Up in it,
// and that view has every such member and no member in a transient status: a cluster with no
// change under way. It costs a look at each member's digest and one member's view, so a
// thousand members can be watched often (Converged compares every view).
func (s *Sim) OneView() bool {
	var digest uint64
	first, running := true, 0
	for _, n := range s.Nodes() {
		if !n.Alive || n.Paused {
			continue
		}
		running++
		if !n.M.Joined() || n.M.Self().Status != membership.Up {
			return false
		}
		if first {
			digest, first = n.M.Digest(), false
		} else if n.M.Digest() != digest {
			return false
		}
	}
	if first {
		return false
	}
	up := 0
	for _, n := range s.Nodes() {
		if n.Alive && !n.Paused {
			for _, m := range n.M.Members() {
				if m.Status == membership.Up {
					up++
				} else if m.Status != membership.Removed {
					return false
				}
			}
			break
		}
	}
	return up == running
}

// allocateShards sends one message to an entity of every shard and waits until every shard
// runs on a member.
func (c *capacityRun) allocateShards() error {
	s := c.s
	c.touch = map[shard.ID]shard.EntityID{}
	for k := 0; len(c.touch) < c.o.Shards; k++ {
		e := shard.EntityID(fmt.Sprintf("e%d", k))
		if sh := s.extract(e); c.touch[sh] == "" {
			c.touch[sh] = e
		}
	}
	begin := s.Now()
	c.touchShards(func(shard.ID) bool { return true })
	err := c.until("every shard allocated", c.o.Limit, func() bool {
		if hosted := c.hosted(); len(hosted) < c.o.Shards {
			c.touchEverySecond(begin, func(id shard.ID) bool { return hosted[id] == nil })
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	c.rep.ShardsAllocatedS = s.Now().Sub(begin).Seconds()
	c.progress("every shard allocated, %.1f s after convergence", c.rep.ShardsAllocatedS)
	return nil
}

// hosted returns where each shard runs, on running members.
func (c *capacityRun) hosted() map[shard.ID]*Node {
	out := map[shard.ID]*Node{}
	for _, n := range c.s.Nodes() {
		if n.Running() {
			for id := range n.E.Shards(c.typ) {
				out[id] = n
			}
		}
	}
	return out
}

// touchShards sends a message to the entity of every shard that want picks, from a random
// running member.
func (c *capacityRun) touchShards(want func(shard.ID) bool) {
	var from []int
	for _, n := range c.s.Nodes() {
		if n.Running() {
			from = append(from, n.Index)
		}
	}
	if len(from) == 0 {
		return
	}
	ids := make([]shard.ID, 0, len(c.touch))
	for id := range c.touch {
		if want(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		c.s.Send(from[c.r.IntN(len(from))], c.typ, c.touch[id])
	}
}

// touchEverySecond touches the shards want picks once a second since begin: the traffic
// that brings a shard back after its member is gone.
func (c *capacityRun) touchEverySecond(begin time.Time, want func(shard.ID) bool) {
	if since := c.s.Now().Sub(begin); since > 0 && since%time.Second < step {
		c.touchShards(want)
	}
}

func (c *capacityRun) measure() {
	s := c.s
	c.progress("measuring the idle cluster for %v", c.o.Measure)
	before, cpu := s.Metered(), processCPU()
	s.RunFor(c.o.Measure)
	d := s.Metered().Sub(before)
	c.rep.IdleCPUPerMember = time.Duration(float64(processCPU()-cpu) / float64(c.o.Members) / c.o.Measure.Seconds())
	secs, n := c.o.Measure.Seconds(), float64(c.o.Members)
	rep := c.rep
	rep.MeasuredS = secs
	rep.MembershipBytesPerMemberPerS = float64(d.Membership.Bytes) / n / secs
	rep.MembershipMsgsPerMemberPerS = float64(d.Membership.Messages) / n / secs
	rep.ShardingBytesPerMemberPerS = float64(d.Sharding.Bytes) / n / secs
	rep.ShardingMsgsPerMemberPerS = float64(d.Sharding.Messages) / n / secs
	rep.StoreBytesPerMemberPerS = float64(d.Store.Bytes) / n / secs
	rep.StoreMsgsPerMemberPerS = float64(d.Store.Messages) / n / secs
	if i, busiest := d.Busiest(); i > 0 {
		rep.BusiestMember = string(s.Node(i).ID)
		rep.BusiestBytesPerS = float64(busiest.Bytes) / secs
		rep.BusiestMsgsPerS = float64(busiest.Messages) / secs
	}
	rep.Kinds = map[string]Rate{}
	for k, cnt := range d.Kinds {
		rep.Kinds[k] = Rate{Messages: float64(cnt.Messages) / n / secs, Bytes: float64(cnt.Bytes) / n / secs}
	}
}

// pick returns k running members at random.
func (c *capacityRun) pick(k int) []*Node {
	var live []*Node
	for _, n := range c.s.Nodes() {
		if n.Running() {
			live = append(live, n)
		}
	}
	c.r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	out := live[:min(k, len(live))]
	slices.SortFunc(out, func(a, b *Node) int { return a.Index - b.Index })
	return out
}

// seenBy reports whether every running member's view has each of nodes at least at status
// (of the incarnation that ran).
func (c *capacityRun) seenBy(nodes []*Node, status membership.Status) bool {
	for _, n := range c.s.Nodes() {
		if !n.Running() || slices.Contains(nodes, n) {
			continue
		}
		for _, d := range nodes {
			m, ok := n.M.Member(d.ID)
			if !ok || (m.Incarnation == d.Incarnation && m.Status < status) {
				return false
			}
		}
	}
	return true
}

// anyUnreachable reports whether some running member has one of nodes unreachable.
func (c *capacityRun) anyUnreachable(nodes []*Node) bool {
	for _, n := range c.s.Nodes() {
		if n.Running() {
			for _, d := range nodes {
				if n.M.Unreachable(d.ID) {
					return true
				}
			}
		}
	}
	return false
}

// failover waits until every shard in moved runs on a running member, touching them every
// second; it returns how long that took.
func (c *capacityRun) failover(begin time.Time, moved map[shard.ID]bool, what string) (float64, error) {
	if c.typ == "" || len(moved) == 0 {
		return 0, nil
	}
	err := c.until(what, c.o.Limit, func() bool {
		hosted := c.hosted()
		for id := range moved {
			if hosted[id] == nil {
				c.touchEverySecond(begin, func(id shard.ID) bool { return moved[id] && hosted[id] == nil })
				return false
			}
		}
		return true
	})
	return c.s.Now().Sub(begin).Seconds(), err
}

func (c *capacityRun) kill() error {
	s := c.s
	victims := c.pick(c.o.Kill)
	moved := map[shard.ID]bool{}
	if c.typ != "" {
		for id, n := range c.hosted() {
			if slices.Contains(victims, n) {
				moved[id] = true
			}
		}
	}
	c.progress("kill -9 of %d members", len(victims))
	begin := s.Now()
	for _, v := range victims {
		s.Kill(v.Index)
	}
	rep := &KillReport{Members: len(victims), ShardsOnDead: len(moved)}
	c.rep.Kill = rep
	since := func() float64 { return s.Now().Sub(begin).Seconds() }
	if err := c.until("a killed member detected", c.o.Limit, func() bool { return c.anyUnreachable(victims) }); err != nil {
		return err
	}
	rep.DetectedS = since()
	if err := c.until("the killed members Down everywhere", c.o.Limit, func() bool { return c.seenBy(victims, membership.Down) }); err != nil {
		return err
	}
	rep.DownedS = since()
	if err := c.until("the killed members removed everywhere", c.o.Limit, func() bool { return c.seenBy(victims, membership.Removed) }); err != nil {
		return err
	}
	rep.RemovedS = since()
	rep.BoundS = rep.DetectedS + c.o.Membership.SplitBrainResolver.StableAfter.Seconds() + c.o.Membership.DownRemovalMargin.Seconds() + 2
	c.rep.RemovedAfterKillS = &rep.RemovedS
	c.progress("killed members removed %.1f s after the kill", rep.RemovedS)
	var err error
	rep.FailoverS, err = c.failover(begin, moved, "the killed members' shards running again")
	if err != nil {
		return err
	}
	return c.until("one view again", c.o.Limit, c.s.OneView)
}

func (c *capacityRun) partition() error {
	s := c.s
	cut := c.pick(c.o.Partition)
	var a, b []int
	for _, n := range s.Nodes() {
		if slices.Contains(cut, n) {
			b = append(b, n.Index)
		} else {
			a = append(a, n.Index)
		}
	}
	moved := map[shard.ID]bool{}
	if c.typ != "" {
		for id := range c.hosted() {
			moved[id] = true // whichever side loses, its shards move
		}
	}
	c.progress("partition: %d members cut off from %d", len(b), len(a))
	begin := s.Now()
	s.Net.Partition(a, b)
	rep := &PartitionReport{Members: len(cut)}
	c.rep.Partition = rep
	since := func() float64 { return s.Now().Sub(begin).Seconds() }
	if err := c.until("the partition detected", c.o.Limit, func() bool {
		for _, n := range s.Nodes() {
			if n.Running() && len(c.unreachableOf(n)) > 0 {
				return true
			}
		}
		return false
	}); err != nil {
		return err
	}
	rep.DetectedS = since()
	if err := c.until("one side running, the other removed", c.o.Limit, func() bool {
		return s.RunningSidesConnected() == nil && c.s.OneView()
	}); err != nil {
		return err
	}
	rep.ResolvedS = since()
	for _, n := range s.Nodes() {
		if n.Running() {
			rep.Kept++
		}
	}
	for id, n := range c.hosted() {
		if n != nil {
			delete(moved, id) // still on a running member
		}
	}
	c.progress("partition resolved %.1f s after it fell: %d members run", rep.ResolvedS, rep.Kept)
	var err error
	rep.FailoverS, err = c.failover(begin, moved, "the stopped side's shards running again")
	s.Net.Heal()
	return err
}

// unreachableOf returns the members n's view has unreachable.
func (c *capacityRun) unreachableOf(n *Node) []membership.NodeID {
	var out []membership.NodeID
	for _, o := range c.s.Nodes() {
		if n.M.Unreachable(o.ID) {
			out = append(out, o.ID)
		}
	}
	return out
}

func (c *capacityRun) pause() error {
	s := c.s
	victim := c.pick(1)[0]
	c.progress("pausing %s for %v", victim.ID, c.o.Pause)
	rep := &PauseReport{PausedS: c.o.Pause.Seconds()}
	c.rep.Pause = rep
	begin := s.Now()
	s.Pause(victim.Index)
	end := begin.Add(c.o.Pause)
	for s.Now().Before(end) {
		s.RunFor(min(step, end.Sub(s.Now())))
		if !rep.Removed && c.seenBy([]*Node{victim}, membership.Removed) {
			rep.Removed, rep.RemovedS = true, s.Now().Sub(begin).Seconds()
		}
	}
	s.Resume(victim.Index)
	err := c.until("the paused member serving again or stopped", c.o.Limit, func() bool {
		return victim.Stopped != nil || victim.Running()
	})
	switch {
	case err != nil:
		return err
	case victim.Stopped != nil:
		rep.Outcome = "stopped (" + victim.Stopped.Reason.String() + ")"
	default:
		rep.Outcome = "serving again"
	}
	return c.until("one view again", c.o.Limit, c.s.OneView)
}

// processCPU returns the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
