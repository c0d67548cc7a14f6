package sim

import (
	"container/heap"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/trust"
)

// Options configures a simulation.
type Options struct {
	// Seed seeds every random choice of the run.
	Seed uint64
	// Membership is the membership configuration of every node (validated by New).
	Membership membership.Config
	// TickInterval is how often each node's core is ticked. Default 100 ms.
	TickInterval time.Duration
	// Types are the entity types every node runs (none: membership only).
	Types []engine.TypeConfig
	// NumberOfShards of the extractor Send uses. Default 30.
	NumberOfShards int
	// SeparateClusters: the nodes form more than one cluster (a deployment mistake), so a
	// shard may be hosted in each; only the entity invariant (one live instance) is checked
	// across them — what the shards' leases keep.
	SeparateClusters bool
	// Store configures every member's replica of the replicated store (quorums, timeout).
	Store node.StoreConfig
	// AntiEntropyInterval of the stores; 0: the store's default (5 s), negative: never.
	AntiEntropyInterval time.Duration
	// Durable: the entities keep a durable counter (the built-in counter's way: loaded with
	// a fenced read when an incarnation starts, saved before each increment is answered),
	// and the store's invariants are checked on it (durable.go).
	Durable bool
	// Logger receives the members' logs (default: none).
	Logger *slog.Logger
	// Trust is what every member trusts (node.CoreConfig.Trust): with admins, a member
	// follows only the directives one of them signed. Nil: no admins.
	Trust *trust.Policy
	// NodeName names node i and gives its address (default n01 and /sim/n01): the capacity
	// simulator gives real libp2p peer ids and addresses, so that it measures real frames.
	NodeName func(i int) (membership.NodeID, string)
	// Quiet keeps no timeline: a run of a thousand members would write millions of lines.
	Quiet bool
}

// Sim is one simulated cluster: the real member cores (node.Core) and their replicated
// stores (remember.Machine on a MemDisk), on a simulated network and a virtual clock.
type Sim struct {
	opts   Options
	rng    *rand.Rand
	start  time.Time
	now    time.Time
	q      eventQueue
	seq    uint64
	events uint64 // events run so far

	// Net is the simulated network; change it between runs.
	Net *Network

	nodes []*Node // by index; nodes[0] is unused
	byID  map[membership.NodeID]*Node

	timeline  []string
	violation error
	// Delivered counts messages delivered to a member.
	Delivered int
	// Moves counts shard allocations that moved a shard from one member to another (after a
	// handoff or the loss of its member).
	Moves int
	// Refused counts what members refused because its sender was not an admitted member of
	// theirs, by protocol ("replica" for the stores).
	Refused map[string]int
	nonces  uint64 // the directives' nonces so far

	fullRestarts int // whole-cluster restarts (restartAll)

	traffic *traffic   // entity messages and their fate
	durable *durable   // the durable counters and the store's invariants
	rem     *reminders // durable reminders on the durable counters
	// TermRegressed: an allocation's coordinator term was below one seen before (noteTerm).
	TermRegressed bool
	extractor     *shard.HashCodeExtractor
	nextAsk       uint64
	asks          map[uint64]*simAsk     // every ask sent, by id
	started       map[entityKey]bool     // every entity an incarnation of which ever started
	stored        map[string]*storedView // storedRecords by prefix, while the disks do not change

	leases map[leaseKey]*simLease // the shards' leases (use-lease), shared by every node

	trigger  *trigger       // a partition armed to fall at a leader action
	meter    *meter         // counts what members send, when measuring (meter.go)
	homes    *shardIndex    // which members host each shard (checkShardHomes)
	sbrLease *resolverLease // the split-brain resolver's lease (resolverlease.go)

	// auxRng draws what the member's store, disk, leases and entities add to a run (apart
	// from rng, so the membership draws of a run stay as they were without them).
	auxRng *rand.Rand

	// DiskFailRate is the probability that a disk operation fails (nothing of it done): a
	// disk fault injected into every member's store. Set it between runs.
	DiskFailRate float64
}

// Node is one simulated member process.
type Node struct {
	Index       int
	ID          membership.NodeID
	Addr        string // its address, as its member record gives it
	Incarnation uint64
	Roles       []string
	Version     membership.Version
	Core        *node.Core       // the member's decisions
	E           *engine.Engine   // Core's machines
	M           *membership.Node // E's membership machine

	Seeds   []int // the nodes it was told to join through (none: it formed the cluster)
	Alive   bool  // the process runs (false after kill or stop)
	Paused  bool  // SIGSTOP: holds its input until resumed
	Stopped *membership.Stopped
	// LastClusterSize is what its data directory keeps of the cluster it was last Up in
	// (Env.KeepClusterSize), given to its next process.
	LastClusterSize uint32

	// servingUntil is its machine's lease deadline as of event servingAt of the simulation.
	servingAt    uint64
	servingUntil time.Time

	tickAt   time.Time                    // the extra tick scheduled last (tickWhenDue)
	held     []func()                     // deliveries that arrived while paused
	removed  map[membership.NodeID]uint64 // the incarnation of each member its machine has reported Removed
	sim      *Sim
	env      *simEnv
	store    *memberStore // its replica of the store: its disk outlives its processes
	entities *entityRuntime
	leases   map[leaseKey]uint64 // the leases its shards believe they hold, by shard generation
}

// Running reports whether the node's process runs, is not paused, and its machine serves.
// The lease deadline is computed once per event of the simulation (and again after the
// node's own step): the checks ask for it of every node after every step.
func (n *Node) Running() bool {
	if !n.Alive || n.Paused || n.M == nil {
		return false
	}
	if n.servingAt != n.sim.events {
		n.servingAt, n.servingUntil = n.sim.events, n.M.ServingUntil()
	}
	return n.sim.now.Before(n.servingUntil)
}

// New returns a simulation with no nodes. It panics on an invalid configuration.
func New(opts Options) *Sim {
	if opts.TickInterval == 0 {
		opts.TickInterval = 100 * time.Millisecond
	}
	if err := opts.Membership.Validate(); err != nil {
		panic(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range opts.Types {
		if err := opts.Types[i].Coordinator.Validate(); err != nil {
			panic(err)
		}
	}
	s := &Sim{
		opts:    opts,
		rng:     rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5eed)),
		auxRng:  rand.New(rand.NewPCG(opts.Seed, opts.Seed^0xd12ec7)),
		start:   start,
		now:     start,
		Net:     newNetwork(),
		nodes:   []*Node{nil},
		byID:    map[membership.NodeID]*Node{},
		traffic: newTraffic(),
		asks:    map[uint64]*simAsk{},
		started: map[entityKey]bool{},
		stored:  map[string]*storedView{},
		leases:  map[leaseKey]*simLease{},
		Refused: map[string]int{},
	}
	s.durable = newDurable(s)
	s.rem = newReminders()
	return s
}

// Now returns the virtual time.
func (s *Sim) Now() time.Time { return s.now }

// Elapsed returns the virtual time since the start.
func (s *Sim) Elapsed() time.Duration { return s.now.Sub(s.start) }

// Err returns the first invariant violation, or nil.
func (s *Sim) Err() error { return s.violation }

// Timeline returns what happened, one line per fault and membership event.
func (s *Sim) Timeline() []string { return s.timeline }

// Nodes returns every node created so far, by index order.
func (s *Sim) Nodes() []*Node { return s.nodes[1:] }

// Running returns the indexes of the nodes running now, in index order.
func (s *Sim) Running() []int {
	var out []int
	for _, n := range s.Nodes() {
		if n.Running() {
			out = append(out, n.Index)
		}
	}
	return out
}

// Node returns node i (1-based).
func (s *Sim) Node(i int) *Node { return s.nodes[i] }

// AddNode creates node number len+1 without starting it.
func (s *Sim) AddNode(roles []string, version membership.Version) *Node {
	i := len(s.nodes)
	n := &Node{Index: i, ID: membership.NodeID(fmt.Sprintf("n%02d", i)), Roles: roles, Version: version, sim: s}
	n.Addr = "/sim/" + string(n.ID)
	if s.opts.NodeName != nil {
		n.ID, n.Addr = s.opts.NodeName(i)
	}
	n.store = newMemberStore(s, n)
	s.nodes = append(s.nodes, n)
	s.byID[n.ID] = n
	return n
}

// Start starts node i's process as a new incarnation. With no seeds it forms a new cluster;
// otherwise it joins through the seeds, or, when none of them is in a cluster, the one of
// them with the lowest id forms one (membership/bootstrap.go).
func (s *Sim) Start(i int, seeds ...int) {
	n := s.nodes[i]
	if n.Alive {
		panic(fmt.Sprintf("start %s: already running", n.ID))
	}
	n.Incarnation++
	n.Alive, n.Paused, n.Stopped, n.held, n.Seeds = true, false, nil, nil, seeds
	self := membership.Member{
		Node:        n.ID,
		Incarnation: n.Incarnation,
		Addrs:       []string{n.Addr},
		Roles:       n.Roles,
		AppVersion:  n.Version,

		LastClusterSize: n.LastClusterSize,
	}
	n.env = &simEnv{s: s, n: n, inc: n.Incarnation}
	n.entities = newEntityRuntime(s, n)
	n.leases = map[leaseKey]uint64{}
	n.removed = map[membership.NodeID]uint64{}
	n.Core = node.NewCore(node.CoreConfig{Membership: s.opts.Membership, ClusterName: "sim", Logger: s.opts.Logger.With("node", n.ID),
		ReplicationFactor: s.opts.Store.ReplicationFactor, Trust: s.opts.Trust}, self, n.env, s.now)
	n.E = n.Core.Engine()
	n.M = n.E.Membership()
	n.store.open()
	s.logf("start %s (incarnation %d, last cluster size %d)", n.ID, n.Incarnation, n.LastClusterSize)
	for _, tc := range s.opts.Types {
		n.Core.Step(s.now, node.RegisterType{Spec: s.entityType(tc), Done: func(err error) {
			if err != nil {
				panic(err)
			}
		}})
	}
	if len(seeds) == 0 {
		n.Core.Step(s.now, node.FormCluster{})
	} else { // as a daemon given --join: when no seed is in a cluster, the lowest id forms one
		ids := make([]membership.NodeID, len(seeds))
		for k, seed := range seeds {
			ids[k] = s.nodes[seed].ID
		}
		n.Core.Step(s.now, node.JoinSeeds{Seeds: ids})
	}
	for _, seed := range seeds {
		n.Core.Step(s.now, node.JoinVia{Seed: s.nodes[seed].ID})
	}
	s.flush(n)
	offset := time.Duration(s.rng.Int64N(int64(s.opts.TickInterval)))
	s.scheduleTick(n, n.Incarnation, offset)
}

func (s *Sim) scheduleTick(n *Node, inc uint64, after time.Duration) {
	s.schedule(after, func() {
		if !n.Alive || n.Incarnation != inc {
			return
		}
		if !n.Paused {
			s.tickLeases(n)
			n.Core.Tick(s.now)
			s.flush(n)
			n.entities.resume() // mailboxes parked while the member did not serve
		}
		s.scheduleTick(n, inc, s.opts.TickInterval)
	})
}

// tickWhenDue ticks node n once more at its core's TickDue, ahead of the periodic ticks,
// as the real driver does (node.Node's loop).
func (s *Sim) tickWhenDue(n *Node) {
	due := n.Core.TickDue()
	if due.IsZero() || due.Equal(n.tickAt) {
		return
	}
	n.tickAt = due
	inc := n.Incarnation
	s.schedule(due.Sub(s.now), func() {
		if !n.Alive || n.Incarnation != inc || n.Paused {
			return
		}
		s.tickLeases(n)
		n.Core.Tick(s.now)
		s.flush(n)
		n.entities.resume()
	})
}

// input steps node n's core with in and carries out what follows, unless n is dead; a
// paused node takes it when it resumes.
func (s *Sim) input(n *Node, inc uint64, in node.Input) {
	if !n.Alive || n.Incarnation != inc {
		return
	}
	if n.Paused {
		n.held = append(n.held, func() { s.input(n, inc, in) })
		return
	}
	n.Core.Step(s.now, in)
	s.flush(n)
}

// flush carries out what node n's core asked for (through its Env) and checks the
// invariants.
func (s *Sim) flush(n *Node) {
	if !n.Alive {
		return
	}
	n.Core.Flush()
	n.servingAt = 0 // its state changed: Running computes the lease again
	n.env.dispatch()
	n.store.sync()
	s.checkSafety(n)
	if !s.opts.SeparateClusters {
		s.checkShardHomes(n)
	}
	s.checkActiveLimit(n)
	if n.Stopped != nil && n.Alive {
		s.die(n, "stopped")
		return
	}
	s.tickWhenDue(n)
}

// refused counts what member n refused from peer from, not an admitted member of its.
func (s *Sim) refused(n *Node, from membership.NodeID, proto string) {
	s.Refused[proto]++
	if s.Refused[proto]&(s.Refused[proto]-1) == 0 { // 1, 2, 4, …: a line now and then, not one per frame
		s.logf("%s refused a %s frame from %s, not an admitted member (%d so far)", n.ID, proto, from, s.Refused[proto])
	}
}

// Kill stops node i's process at once (kill -9).
func (s *Sim) Kill(i int) {
	n := s.nodes[i]
	s.logf("kill %s", n.ID)
	s.die(n, "killed")
}

// die ends a node's process: everything it held in memory is lost with it, and its disk
// keeps what it had synced.
func (s *Sim) die(n *Node, cause string) {
	if !n.Alive {
		return
	}
	s.traffic.loseHeld(n, cause)
	s.loseAsked(n, cause)
	n.Alive, n.held = false, nil
	n.store.crash()
}

// Pause stops node i's process from running (SIGSTOP); messages to it wait.
func (s *Sim) Pause(i int) {
	s.logf("pause %s", s.nodes[i].ID)
	s.nodes[i].Paused = true
}

// Resume lets a paused node run again (SIGCONT); what arrived meanwhile is delivered.
func (s *Sim) Resume(i int) {
	n := s.nodes[i]
	s.logf("resume %s", n.ID)
	n.Paused = false
	held := n.held
	n.held = nil
	for _, d := range held {
		d()
	}
	n.entities.resume()
}

// Leave makes node i leave gracefully.
func (s *Sim) Leave(i int) {
	n := s.nodes[i]
	s.logf("leave %s", n.ID)
	s.input(n, n.Incarnation, node.Leave{})
}

// Down makes node by mark node target Down, as an operator would.
func (s *Sim) Down(by, target int) {
	n := s.nodes[by]
	s.logf("%s downs %s (operator)", n.ID, s.nodes[target].ID)
	s.input(n, n.Incarnation, node.Down{Node: s.nodes[target].ID, Done: func(bool) {}})
}

// RunFor advances virtual time by d, running everything scheduled meanwhile.
func (s *Sim) RunFor(d time.Duration) {
	s.runUntil(s.now.Add(d), nil)
}

// RunUntil runs until cond holds (checked after every event) or max elapses; it reports
// whether cond held.
func (s *Sim) RunUntil(cond func() bool, limit time.Duration) bool {
	if cond() {
		return true
	}
	return s.runUntil(s.now.Add(limit), cond)
}

func (s *Sim) runUntil(end time.Time, cond func() bool) bool {
	for len(s.q) > 0 && !s.q[0].at.After(end) {
		e := heap.Pop(&s.q).(*event)
		s.now = e.at
		s.events++
		e.run()
		if cond != nil && cond() {
			return true
		}
	}
	s.now = end
	return false
}

func (s *Sim) schedule(after time.Duration, run func()) {
	s.seq++
	heap.Push(&s.q, &event{at: s.now.Add(after), seq: s.seq, run: run})
}

// send carries a message from node from to node to over the simulated network; deliver runs
// on arrival (unless to is dead or partitioned away), lost (if set) when the network or a
// dead receiver loses it. rng draws the message's fate: the run's own for membership and
// coordination, auxRng for what the stores add.
func (s *Sim) send(from, to *Node, rng *rand.Rand, deliver func(*Node), lost func(cause string)) {
	if !s.Net.connected(from.Index, to.Index) {
		if lost != nil {
			lost("partitioned")
		}
		return
	}
	deliveries := s.Net.deliveries(rng)
	if len(deliveries) == 0 && lost != nil {
		lost("dropped by the network")
	}
	for i, delay := range deliveries {
		if i > 0 && lost != nil {
			continue // the network duplicated it; entity messages are not delivered twice by libp2p streams
		}
		s.schedule(delay, func() { s.arrive(from, to, deliver, lost) })
	}
}

func (s *Sim) arrive(from, to *Node, deliver func(*Node), lost func(string)) {
	switch {
	case !to.Alive:
		if lost != nil {
			lost("receiver not running")
		}
		return
	case !s.Net.connected(from.Index, to.Index):
		if lost != nil {
			lost("partitioned in flight")
		}
		return
	case to.Paused:
		to.held = append(to.held, func() { s.arrive(from, to, deliver, lost) })
		return
	}
	s.Delivered++
	deliver(to)
}

// observe records a membership event on the timeline, checks event-level invariants, and
// lets a node whose machine stopped exit.
func (s *Sim) observe(n *Node, e membership.Event) {
	switch e := e.(type) {
	case membership.MemberChanged:
		if !e.New && e.Member.Status < e.Previous {
			s.fail("%s saw %s go back from %s to %s", n.ID, e.Member.Node, e.Previous, e.Member.Status)
		}
		s.logf("%s: %s %s", n.ID, e.Member.Node, e.Member.Status)
		if e.Member.Status == membership.Removed {
			n.removed[e.Member.Node] = e.Member.Incarnation
		} else if n.removed[e.Member.Node] != 0 && n.removed[e.Member.Node] < e.Member.Incarnation {
			delete(n.removed, e.Member.Node) // a newer incarnation joined
		}
		s.fire(n, e)
	case membership.ReachabilityChanged:
		if e.Reachable {
			s.logf("%s: %s reachable", n.ID, e.Node)
		} else {
			s.logf("%s: %s unreachable", n.ID, e.Node)
		}
	case membership.Downed:
		s.logf("%s: downs %v (%s)", n.ID, e.Nodes, e.Reason)
		if len(e.Nodes) != 1 || e.Nodes[0] != n.ID {
			s.checkQuorum(n, e)
		}
	case membership.Stopped:
		s.logf("%s: stopped (%s: %s)", n.ID, e.Reason, e.Detail)
		n.Stopped = &e
	case membership.Suspended:
		s.logf("%s: suspended after a pause", n.ID)
	case membership.Resumed:
		s.logf("%s: confirmed by a majority after a pause", n.ID)
	case membership.Formed:
		s.logf("%s: forms a new cluster (%s)", n.ID, e.Why)
	case membership.LeaderChanged:
	}
}

// checkSafety checks, after every step of n, that nothing n considers gone is still running:
// a member n's view holds as Removed must not run that incarnation anywhere. This is the
// membership half of "a shard never runs on two members at once": once a member is Removed,
// what it hosted is started elsewhere.
func (s *Sim) checkSafety(n *Node) {
	if !n.Running() {
		return
	}
	for id, inc := range n.removed {
		other := s.byID[id]
		if other != nil && other.Incarnation == inc && other.Running() {
			s.fail("%s considers %s (incarnation %d) removed while it still runs", n.ID, id, inc)
		}
	}
}

// checkQuorum checks a decision to down other members: the deciding side must hold the quorum
// of the strategy, or (for indirectly connected members) every member downed must be one
// that some member cannot reach.
func (s *Sim) checkQuorum(n *Node, d membership.Downed) {
	if d.Decision == membership.DownIndirectlyConnected {
		for _, id := range d.Nodes {
			if !slices.Contains(d.Indirect, id) && !slices.Contains(d.Unreachable, id) {
				s.fail("%s downed %s, neither indirectly connected (%v) nor unreachable", n.ID, id, d.Indirect)
			}
		}
		return
	}
	cfg := s.opts.Membership.SplitBrainResolver
	side, others := len(d.Side), len(d.Others)
	ok := false
	switch cfg.ActiveStrategy {
	case membership.KeepMajority:
		lowest := slices.Min(slices.Concat(d.Side, d.Others))
		ok = side > others || (side == others && slices.Contains(d.Side, lowest))
	case membership.StaticQuorum:
		ok = side >= cfg.QuorumSize && side+others <= 2*cfg.QuorumSize-1
	case membership.KeepOldest:
		ok = side > 0
	case membership.LeaseMajority: // only with the lease, unless it downs its own side
		own := d.Decision == membership.DownReachable || d.Decision == membership.ReverseDownIndirectlyConnected
		ok = own || (d.Lease && s.holdsResolverLease(n))
	}
	if !ok {
		s.fail("%s downed %v without a quorum: side %v, others %v", n.ID, d.Nodes, d.Side, d.Others)
	}
	// The decider is counted on its side, unless keep-majority (or lease-majority) does not
	// count it (not a voter) or it is still Joining.
	self := n.M.Self()
	votersOnly := cfg.ActiveStrategy == membership.KeepMajority || cfg.ActiveStrategy == membership.LeaseMajority
	counted := self.Status != membership.Joining && self.Status != membership.WeaklyUp && (self.Voter || !votersOnly)
	if slices.Contains(d.Others, n.ID) || (counted && !slices.Contains(d.Side, n.ID)) {
		s.fail("%s downed %v from a side it is not on: %v", n.ID, d.Nodes, d.Side)
	}
}

func (s *Sim) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.violation != nil {
		return // the first violation is the one to explain
	}
	s.logf("VIOLATION: %s", msg)
	s.violation = fmt.Errorf("at %s: %s", fmtElapsed(s.Elapsed()), msg)
}

func (s *Sim) logf(format string, args ...any) {
	if s.opts.Quiet {
		return
	}
	s.timeline = append(s.timeline, fmtElapsed(s.Elapsed())+" "+fmt.Sprintf(format, args...))
}

func fmtElapsed(d time.Duration) string {
	return fmt.Sprintf("%9.3fs", d.Seconds())
}

// Converged reports whether every live, unpaused node serves, all hold the same view and
// agree on the oldest member, and no member is in a transient status (Joining, Leaving,
// Exiting, Down). A node that never joined because none of its seeds runs any more is left
// out: it keeps asking, as an Akka node with dead seed nodes does.
func (s *Sim) Converged() bool {
	var first *Node
	for _, n := range s.nodes[1:] {
		if !n.Alive || n.Paused {
			continue
		}
		if !n.M.Joined() && !slices.ContainsFunc(n.Seeds, func(i int) bool { return s.nodes[i].Running() }) {
			continue
		}
		if !n.Running() {
			return false
		}
		for _, m := range n.M.Members() {
			if m.Status != membership.Up && m.Status != membership.Removed {
				return false
			}
			if other := s.byID[m.Node]; m.Status == membership.Up && (other == nil || !other.Alive || other.Paused || other.Incarnation != m.Incarnation) {
				return false // a member the view holds Up is dead: not detected yet
			}
		}
		if first == nil {
			first = n
			continue
		}
		if n.M.Digest() != first.M.Digest() {
			return false
		}
		a, _ := n.M.Oldest("")
		b, _ := first.M.Oldest("")
		if a.Node != b.Node {
			return false
		}
	}
	return first != nil
}

// RunningSidesConnected reports an error when two running nodes cannot reach each other:
// after a partition has been resolved, the running members must all be on one side.
func (s *Sim) RunningSidesConnected() error {
	var running []*Node
	for _, n := range s.nodes[1:] {
		if n.Running() {
			running = append(running, n)
		}
	}
	for i, a := range running {
		for _, b := range running[i+1:] {
			if !s.Net.connected(a.Index, b.Index) || !s.Net.connected(b.Index, a.Index) {
				return fmt.Errorf("%s and %s both run on different sides of a partition", a.ID, b.ID)
			}
		}
	}
	return nil
}

// Describe prints node i's view, one member per line.
func (s *Sim) Describe(i int) string {
	n := s.nodes[i]
	if n.M == nil {
		return fmt.Sprintf("%s: not started\n", n.ID)
	}
	var b strings.Builder
	oldest, _ := n.M.Oldest("")
	for _, m := range n.M.Members() {
		mark := ""
		if m.Node == oldest.Node {
			mark += " oldest"
		}
		if m.Node == n.M.Leader() {
			mark += " leader"
		}
		if m.Voter {
			mark += " voter"
		}
		if n.M.Unreachable(m.Node) {
			mark += " unreachable"
		}
		fmt.Fprintf(&b, "%s %s up=%d%s\n", m.Node, m.Status, m.UpNumber, mark)
	}
	return b.String()
}

// Status prints every node's process state, one per line.
func (s *Sim) Status() string {
	var b strings.Builder
	for _, n := range s.nodes[1:] {
		state := "running"
		switch {
		case n.Stopped != nil:
			state = fmt.Sprintf("stopped (%s)", n.Stopped.Reason)
		case !n.Alive:
			state = "dead"
		case n.Paused:
			state = "paused"
		case n.M != nil && !n.M.Serving(n.sim.now):
			state = "not serving"
		}
		fmt.Fprintf(&b, "%s %s\n", n.ID, state)
	}
	return b.String()
}
