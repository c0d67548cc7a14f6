package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/internal/mailbox"
	"github.com/shardmesh/shardmesh/lease"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// Protocol ids of the member-to-member protocols.
const (
	MemberProtocol = "/shardmesh/member/1"
	CoordProtocol  = "/shardmesh/coord/1"
	RegionProtocol = "/shardmesh/region/1"
)

// Config configures a member.
type Config struct {
	// DataDir holds the identity, the incarnation counter, the addrs file and durable state.
	DataDir string
	// Listen are multiaddrs to listen on; default /ip4/127.0.0.1/tcp/0.
	Listen []string
	// Join are multiaddrs (with /p2p/<id>) of members to join through; empty: form a cluster.
	Join []string
	// ClusterKey is the private-network key; nil: an open mesh.
	ClusterKey pnet.PSK
	// ClusterName names the gossip topics; default "shardmesh".
	ClusterName string
	// Roles and AppVersion describe this member to the cluster.
	Roles      []string
	AppVersion string
	// AllowPeers, when set, is the only set of peers this member talks to.
	AllowPeers []peer.ID
	// MDNS turns on local-network discovery.
	MDNS bool
	// ForgetLastCluster: the member does not read <data-dir>/last-cluster-size and joins as
	// a new one (cluster.forget-last-cluster; clustersize.go).
	ForgetLastCluster bool
	// Membership configures the membership machine.
	Membership membership.Config
	// Workers runs entities: how many goroutines (default 2 × GOMAXPROCS) and how many
	// messages one entity handles before yielding (default 32).
	Workers mailbox.Config
	// ShutdownTimeout bounds the graceful handoff when leaving; default 30 s.
	ShutdownTimeout time.Duration
	// TickInterval is how often the machines are ticked; default 100 ms.
	TickInterval time.Duration
	// Logger receives the member's logs; default slog.Default().
	Logger *slog.Logger
	// Store configures this member's replica of the replicated store.
	Store StoreConfig
	// History bounds the placement history; the zero value turns it off.
	History HistoryConfig
	// Leases, when set, makes the provider of the shards' leases (for types whose shards use
	// one, use-lease), given the member's replicated store (for lease.StoreProvider).
	Leases func(*remember.Store) lease.Provider
	// LeaseName names the provider Leases makes (use-lease).
	LeaseName string
	// ResolverLease makes the provider of the split-brain resolver's lease
	// (lease-majority), given the member's replicated store; needed with that strategy.
	ResolverLease func(*remember.Store) lease.Provider
	// Metrics, when set, receives the member's Prometheus metrics (and its store's); give
	// each member its own registry. Nil: no metrics are recorded. See docs/metrics.md.
	Metrics prometheus.Registerer
	// ServingChanged, when set, is told in order, on the member's loop goroutine, when this
	// member starts or stops serving (membership.Node.ServingUntil: Up and holding its
	// majority lease); at is when the change took effect, which for a lease that ran out is
	// its deadline, up to a tick before the call. Keep it quick.
	ServingChanged func(serving bool, at time.Time)
}

// Node is a running member.
type Node struct {
	cfg   Config
	log   *slog.Logger
	dir   *datadir.Dir
	host  *p2p.Host
	store *remember.Store // remembered entities and durable entity state, replicated
	// recovery measures store rounds and remembered entity starts for the adaptive
	// recovery budget (recovery.go).
	recovery recoveryMeter
	self     membership.Member

	gossip    *p2p.Topic
	sub       *p2p.Subscription
	events    *p2p.Topic
	eventsSub *p2p.Subscription
	eventsOut chan []byte // sharding events to publish, in order

	eng   *engine.Engine          // owned by the loop goroutine
	ready engine.Ready            // the loop's reused output buffer
	types map[string]*typeRuntime // owned by the loop goroutine
	specs sync.Map                // type name → *EntityType, for senders on any goroutine
	pool  *mailbox.Pool
	asks  *asks

	metrics     *metrics       // nil without Config.Metrics
	typeMetrics []*typeMetrics // every registered type's; owned by the loop goroutine

	inbox chan input
	out   *outboxes
	view  atomic.Pointer[View]

	// servingUntil is the lease deadline for entities, on the monotonic clock: nanoseconds
	// since clockBase. Reading only the monotonic clock is cheaper than time.Now, and a
	// wall-clock step cannot stretch the lease.
	servingUntil atomic.Int64
	clockBase    time.Time
	servingMu    sync.Mutex
	servingCh    chan struct{} // closed when serving may have started
	servingShown bool          // ServingChanged was last told true (loop goroutine)
	lapsedAt     time.Time     // when serving last stopped (loop goroutine; zero: serving, or never served)
	lapseLogged  bool          // that stop was logged above debug level (loop goroutine)

	// The size of the cluster this member is Up in, kept on disk (clustersize.go): the size
	// to write (stored by the loop only), and a write due.
	sizeLatest atomic.Uint32
	sizeDue    chan struct{}
	// A forming cluster waiting for members of the last one (loop only): since when, and the
	// last warning.
	quorumWaitSince, quorumWarned time.Time

	subsMu sync.Mutex
	subs   map[chan Event]struct{}

	leases leases // the local shards' leases (use-lease)
	// resolverLease is the split-brain resolver's lease (lease-majority), made at its first
	// use; owned by the loop goroutine.
	resolverLease lease.Lease
	delivered     uint64 // messages handed to entities (loop goroutine; LocalStats)

	history        chan PlacementRecord // placement records for writeHistory
	historyDropped atomic.Uint64

	directivesDue chan struct{}                   // asks refreshDirectivesLoop for a read now
	stoppedTypes  atomic.Pointer[map[string]bool] // entity types out of service (senders fail fast)

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
	stopped  atomic.Pointer[membership.Stopped]
	wg       sync.WaitGroup
}

// input is one thing for the loop goroutine to feed the engine: a message for an entity
// (the common case, kept small since every one is copied through the inbox), or a control
// input.
type input struct {
	typ string          // the entity type (deliveries and coordination)
	env region.Envelope // the message, when ctl is nil
	ctl *control
}

// control is an input other than a message for an entity.
type control struct {
	kind    controlKind
	from    membership.NodeID
	member  membership.Message
	coord   coordinator.Message
	command func(time.Time)
}

type controlKind uint8

const (
	inMember controlKind = iota
	inCoord
	inCommand
)

// Start opens the data directory, starts the libp2p host, and starts joining (or forming)
// the cluster. It returns once the member listens; joining goes on in the background.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.TickInterval == 0 {
		cfg.TickInterval = 100 * time.Millisecond
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = "shardmesh"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Membership.SplitBrainResolver.ActiveStrategy == membership.LeaseMajority && cfg.ResolverLease == nil {
		return nil, fmt.Errorf("split-brain-resolver.active-strategy = lease-majority needs a lease (Config.ResolverLease)")
	}
	if err := cfg.Membership.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Workers.Validate(); err != nil {
		return nil, err
	}
	dir, err := datadir.Open(cfg.DataDir)
	if inUse := (*datadir.InUseError)(nil); errors.As(err, &inUse) {
		return nil, fmt.Errorf("%w: %s is held by another sharddaemon (pid %s); stop it or use another --data-dir", datadir.ErrInUse, inUse.Dir, inUse.PID)
	}
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			dir.RemoveAddrs()
			dir.Close()
		}
	}()
	key, err := p2p.LoadOrCreateIdentity(dir.File(datadir.IdentityFile))
	if err != nil {
		return nil, err
	}
	incarnation, err := dir.NextIncarnation()
	if err != nil {
		return nil, err
	}
	var lastSize uint32 // forget-last-cluster: a new member, whatever the file holds
	if !cfg.ForgetLastCluster {
		if lastSize, err = dir.LastClusterSize(); err != nil {
			return nil, err
		}
	}
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("identity in %s: %w", dir.File(datadir.IdentityFile), err)
	}
	log := cfg.Logger.With("node", membership.NodeID(pid.String()).Short()) // on every line of the member
	host, err := p2p.New(ctx, p2p.Config{
		Identity:    key,
		ListenAddrs: cfg.Listen,
		ClusterKey:  cfg.ClusterKey,
		AllowPeers:  cfg.AllowPeers,
		MDNS:        cfg.MDNS,
		MDNSTag:     "shardmesh-" + cfg.ClusterName,
		Logger:      log.With("component", "p2p"),
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			host.Close()
		}
	}()
	addrs := make([]string, 0)
	for _, a := range host.Addrs() {
		addrs = append(addrs, a.String())
	}
	self := membership.Member{
		Node:        membership.NodeID(host.ID().String()),
		Incarnation: incarnation,
		Addrs:       addrs,
		Roles:       cfg.Roles,
		AppVersion:  membership.Version(cfg.AppVersion),
		// A forming cluster waits for a majority of this member's last cluster.
		LastClusterSize: lastSize,
	}
	topic, err := host.Join("/shardmesh/" + cfg.ClusterName + "/membership/1")
	if err != nil {
		return nil, err
	}
	sub, err := topic.Subscribe()
	if err != nil {
		return nil, err
	}
	events, err := host.Join("/shardmesh/" + cfg.ClusterName + "/sharding/1")
	if err != nil {
		return nil, err
	}
	eventsSub, err := events.Subscribe()
	if err != nil {
		return nil, err
	}
	pool, err := mailbox.NewPool(cfg.Workers)
	if err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	nctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		metrics:       met,
		cfg:           cfg,
		log:           log,
		dir:           dir,
		host:          host,
		self:          self,
		gossip:        topic,
		sub:           sub,
		events:        events,
		eventsSub:     eventsSub,
		eventsOut:     make(chan []byte, 4096),
		eng:           engine.New(engine.Config{Membership: cfg.Membership, ShutdownTimeout: cfg.ShutdownTimeout, AwaitDirectives: true, DurableTerms: true}, self, time.Now()),
		types:         map[string]*typeRuntime{},
		pool:          pool,
		asks:          newAsks(),
		inbox:         make(chan input, 65536),
		subs:          map[chan Event]struct{}{},
		directivesDue: make(chan struct{}, 1),
		history:       make(chan PlacementRecord, historyQueue),
		servingCh:     make(chan struct{}),
		sizeDue:       make(chan struct{}, 1),
		clockBase:     time.Now(),
		ctx:           nctx,
		cancel:        cancel,
		done:          make(chan struct{}),
	}
	n.out = newOutboxes(nctx, host, n.log, met)
	host.Handle(MemberProtocol, n.handleMemberFrame)
	host.Handle(CoordProtocol, n.handleCoordFrame)
	host.Handle(RegionProtocol, n.handleRegionFrame)
	n.publishView()
	if err := n.openStore(ctx); err != nil {
		cancel()
		return nil, err
	}
	n.leases.of, n.leases.gen = map[leaseKey]lease.Lease{}, map[leaseKey]uint64{}
	if cfg.Leases != nil {
		n.leases.provider = cfg.Leases(n.store)
	}
	if err := dir.WriteAddrs(addrs); err != nil {
		cancel()
		n.store.Close()
		return nil, fmt.Errorf("write %s: %w", dir.File(datadir.AddrsFile), err)
	}
	ok = true
	n.log.Info("member started", "peer", self.Node, "incarnation", incarnation, "addrs", addrs, "roles", cfg.Roles, "app_version", cfg.AppVersion)
	n.wg.Add(7)
	go n.loop()
	go n.writeClusterSize()
	if cfg.History.MaxPerShard > 0 { // off: no writer, no pruning scans
		n.wg.Add(1)
		go n.writeHistory()
	}
	go n.refreshDirectivesLoop()
	go n.receiveGossip()
	go n.discover()
	go n.publishEvents()
	go n.receiveEvents()
	n.join()
	return n, nil
}

// ID returns this member's node id.
func (n *Node) ID() membership.NodeID { return n.self.Node }

// Self returns this member as it introduced itself.
func (n *Node) Self() membership.Member { return n.self }

// Host returns the libp2p host, for the protocols layered on this member (admin).
func (n *Node) Host() *p2p.Host { return n.host }

// Done is closed when the member has stopped: it left, was downed or removed, or Close was
// called.
func (n *Node) Done() <-chan struct{} { return n.done }

// StopReason says why the member stopped, or nil while it runs or when closed by Close.
func (n *Node) StopReason() *membership.Stopped { return n.stopped.Load() }

// RegisterType starts hosting an entity type on this member (or proxying it, on a member
// without the type's role).
func (n *Node) RegisterType(spec EntityType) error {
	if strings.Contains(spec.Name, datadir.Sep) {
		return fmt.Errorf("entity type %q: a name may not contain a 0 byte", spec.Name)
	}
	if spec.Name == "" || spec.New == nil || spec.Extractor == nil || spec.EncodeMessage == nil || spec.DecodeMessage == nil ||
		spec.EncodeReply == nil || spec.DecodeReply == nil {
		return fmt.Errorf("entity type %q: Name, New, Extractor and the codecs are required", spec.Name)
	}
	spec.Settings.Name = spec.Name
	if spec.Settings.Shard.Lease.Enabled && n.leases.provider == nil {
		return fmt.Errorf("entity type %q: its shards use a lease (use-lease) but this member has no lease provider", spec.Name)
	}
	group, err := mailbox.NewGroup[*message](n.pool, mailbox.GroupConfig{})
	if err != nil {
		return err
	}
	res := make(chan error, 1)
	n.command(func(now time.Time) {
		if _, dup := n.types[spec.Name]; dup {
			res <- fmt.Errorf("entity type %q is already registered", spec.Name)
			return
		}
		if err := n.eng.AddType(now, spec.Settings); err != nil {
			res <- err
			return
		}
		t := &typeRuntime{spec: spec, credits: newCredits(spec.Settings.Region.BufferSize), group: group, entities: map[shard.EntityID]*entity{},
			m: n.metrics.forType(spec.Name)}
		n.types[spec.Name] = t
		n.specs.Store(spec.Name, t)
		if t.m != nil {
			n.typeMetrics = append(n.typeMetrics, t.m)
		}
		res <- nil
	})
	select {
	case err := <-res:
		return err
	case <-n.done:
		return ErrStopped
	}
}

// Tell sends msg to entity id of entity type typ, without waiting for it to be handled.
func (n *Node) Tell(typ string, id string, msg any) error {
	t, err := n.sender(typ)
	if err != nil {
		return err
	}
	return n.deliver(context.Background(), t, id, &message{value: msg})
}

// Ask sends msg to entity id of entity type typ and waits for its reply or ctx.
func (n *Node) Ask(ctx context.Context, typ string, id string, msg any) (any, error) {
	t, err := n.sender(typ)
	if err != nil {
		return nil, err
	}
	spec := &t.spec
	r, err := n.ask(ctx, t, id, &message{value: msg})
	if err != nil {
		return nil, err
	}
	if r.encoded != nil {
		return spec.DecodeReply(r.encoded)
	}
	return r.value, nil
}

// TellEncoded sends a message already in the entity type's message codec (from tools).
func (n *Node) TellEncoded(typ string, id string, payload []byte) error {
	t, err := n.sender(typ)
	if err != nil {
		return err
	}
	return n.deliver(context.Background(), t, id, &message{encoded: nonNil(payload)})
}

// AskEncoded asks with a message in the type's message codec and returns the reply in the
// type's reply codec (from tools).
func (n *Node) AskEncoded(ctx context.Context, typ string, id string, payload []byte) ([]byte, error) {
	t, err := n.sender(typ)
	if err != nil {
		return nil, err
	}
	spec := &t.spec
	r, err := n.ask(ctx, t, id, &message{encoded: nonNil(payload)})
	if err != nil || r.encoded != nil || r.value == nil {
		return r.encoded, err
	}
	return spec.EncodeReply(r.value)
}

func (n *Node) ask(ctx context.Context, t *typeRuntime, id string, m *message) (askResult, error) {
	start := t.m.askStart()
	p := n.asks.create()
	m.ask = p
	if err := n.deliver(ctx, t, id, m); err != nil {
		t.m.asked(start, err, ctx.Err() != nil, errors.Is(err, ErrStopped))
		return askResult{}, err
	}
	select {
	case r := <-p.result:
		n.asks.forget(p)
		t.m.asked(start, r.err, false, false)
		return r, r.err
	case <-ctx.Done():
		n.asks.forget(p)
		t.m.asked(start, nil, true, false)
		return askResult{}, fmt.Errorf("ask %s %s: %w", t.spec.Name, id, ctx.Err())
	case <-n.done:
		t.m.asked(start, nil, false, true)
		return askResult{}, ErrStopped
	}
}

// sender returns a registered type for senders on any goroutine (its spec and credits only).
func (n *Node) sender(typ string) (*typeRuntime, error) {
	v, ok := n.specs.Load(typ)
	if !ok {
		return nil, unknownType(typ)
	}
	if n.typeStopped(typ) {
		return nil, fmt.Errorf("send to %s: %w", typ, ErrTypeStopped)
	}
	return v.(*typeRuntime), nil
}

// deliver hands a message to the loop, after taking one of the type's credits (see
// maxInflight).
func (n *Node) deliver(ctx context.Context, t *typeRuntime, id string, m *message) error {
	if id == "" {
		return errors.New("entity id is empty")
	}
	if err := t.credits.acquire(ctx, n.done); err != nil {
		if errors.Is(err, ErrStopped) {
			return err
		}
		return fmt.Errorf("send to %s %s: waited for room (%d messages of the type in flight here, the bound is min(buffer-size, %d)): %w",
			t.spec.Name, id, t.credits.limit, maxInflight, err)
	}
	m.credits = t.credits
	eid := shard.EntityID(id)
	in := input{typ: t.spec.Name, env: region.Envelope{Shard: t.spec.Extractor.ShardID(eid), Entity: eid, Payload: m}}
	select {
	case n.inbox <- in: // the common case, without a two-way select
		return nil
	default:
	}
	select {
	case n.inbox <- in:
		return nil
	case <-n.done:
		m.credits.release()
		return ErrStopped
	}
}

// Leave hands off every shard, leaves the cluster gracefully and waits until the member is
// removed (or ctx ends).
func (n *Node) Leave(ctx context.Context) error {
	select {
	case n.inbox <- input{ctl: &control{kind: inCommand, command: func(now time.Time) { n.eng.Leave(now) }}}:
	case <-n.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-n.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("leave: not removed in time: %w", ctx.Err())
	}
}

// Down marks node Down, as an operator would.
func (n *Node) Down(ctx context.Context, node membership.NodeID) error {
	ok, err := onLoop(ctx, n, func(now time.Time) (bool, error) { return n.eng.Down(now, node), nil })
	if err == nil && !ok {
		err = fmt.Errorf("%s is not a current member", node)
	}
	return err
}

// Close stops the member at once, without leaving (as a crash would, but releasing the data
// directory).
func (n *Node) Close() error {
	n.stop(nil)
	n.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.pool.Close(ctx); err != nil {
		n.log.Warn("entities still running at close", "err", err)
	}
	n.releaseLeases(ctx) // before the store closes: their renewals would write to it
	if err := n.store.Close(); err != nil {
		n.log.Warn("closing the store", "err", err)
	}
	err := n.host.Close()
	n.dir.RemoveAddrs()
	n.dir.Close()
	return err
}

func (n *Node) stop(reason *membership.Stopped) {
	n.stopOnce.Do(func() {
		if reason != nil {
			n.stopped.Store(reason)
		}
		n.cancel()
		close(n.done)
		n.asks.failAll(ErrStopped)
		n.servingMu.Lock()
		close(n.servingCh)
		n.servingMu.Unlock()
	})
}

// command runs fn on the loop goroutine.
func (n *Node) command(fn func(time.Time)) {
	select {
	case n.inbox <- input{ctl: &control{kind: inCommand, command: fn}}:
	case <-n.ctx.Done():
	}
}

// loop is the one goroutine that owns the engine.
func (n *Node) loop() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.TickInterval)
	defer tick.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
			now := time.Now()
			n.eng.ObserveRecovery(now, n.recovery.take())
			n.eng.Tick(now)
			n.execute(now)
			n.updateServing()
			n.publishView()
			n.sampleMetrics()
		case in := <-n.inbox:
			now := time.Now()
			n.step(now, in)
			// Drain what else is waiting before executing: one pass over many inputs.
			for i := 0; i < 256; i++ {
				select {
				case in := <-n.inbox:
					n.step(now, in)
					continue
				default:
				}
				break
			}
			n.execute(now)
		}
	}
}

func (n *Node) step(now time.Time, in input) {
	if in.ctl == nil {
		if err := n.eng.Deliver(now, in.typ, in.env); err != nil {
			m := in.env.Payload.(*message)
			n.reject(in.typ, m, err)
			m.credits.release()
		}
		return
	}
	switch c := in.ctl; c.kind {
	case inMember:
		n.eng.StepMembership(now, c.from, c.member)
	case inCoord:
		n.eng.StepCoordination(now, c.from, in.typ, c.coord)
	case inCommand:
		c.command(now)
	}
}

// execute carries out what the engine asked for.
func (n *Node) execute(now time.Time) {
	rd := &n.ready
	for {
		rd.Reset()
		n.eng.Drain(rd)
		if rd.Empty() {
			n.flushMetrics()
			return
		}
		for _, env := range rd.Membership {
			n.sendMembership(env)
		}
		for _, c := range rd.Coordination {
			n.sendCoord(c)
		}
		for _, f := range rd.Forwards {
			n.forward(f)
		}
		for _, op := range rd.Entities {
			n.applyEntityOp(now, op)
		}
		if len(rd.Leases) > 0 {
			n.leaseOps(rd.Leases)
		}
		if len(rd.ResolverLease) > 0 {
			n.resolverLeaseOps(rd.ResolverLease)
		}
		if len(rd.Store) > 0 {
			n.storeOps(rd.Store)
		}
		for _, r := range rd.Rejected {
			m := r.Envelope.Payload.(*message)
			n.reject(r.Type, m, r.Err)
			m.credits.release()
		}
		if len(rd.Members) > 0 || len(rd.Events) > 0 {
			n.publishView()
			n.updateServing()
		}
		for _, ev := range rd.Members {
			n.logEvent(ev)
			n.metrics.recordMemberEvent(ev)
			n.react(ev)
			n.publish(ev)
		}
		for _, ev := range rd.Events {
			switch e := ev.Event.(type) {
			case engine.CoordinatorStarted:
				n.wantDirectives() // a new coordinator reads them fresh from a majority
				n.wg.Add(1)
				go n.claimTerm(ev.Type, e.Term)
			case coordinator.ShardAllocated:
				n.recordPlacement(ev.Type, e, now)
			}
			n.logTypedEvent(ev)
			n.recordTypedEvent(ev, now)
			n.publish(ev)
			n.gossipEvent(ev, now)
		}
	}
}

// updateServing publishes the lease deadline to the entity workers, wakes those waiting,
// and tells when serving started or stopped (logs, Config.ServingChanged).
func (n *Node) updateServing() {
	until := int64(n.eng.Membership().ServingUntil().Sub(n.clockBase))
	prev := n.servingUntil.Swap(until)
	now := int64(time.Since(n.clockBase))
	if until > now && prev <= now {
		n.servingMu.Lock()
		close(n.servingCh)
		n.servingCh = make(chan struct{})
		n.servingMu.Unlock()
	}
	n.showServing(prev, until, now, func() membership.Status { return n.eng.Membership().Self().Status })
}

// lapseWarnAfter is how long a member that is Up goes without serving before it warns: a
// member that joins, or sees another join, may lapse for the moment its first grants take.
const lapseWarnAfter = time.Second

// showServing tells a change of serving: stopped at prev when the lease ran out before now
// (renewed since or not), at now when it was withdrawn early; started at now. status is
// this member's (for the log). Config.ServingChanged hears every change at once; the log
// warns of a lapse while Up only once it has lasted lapseWarnAfter.
func (n *Node) showServing(prev, until, now int64, status func() membership.Status) {
	clock := func(ns int64) time.Time { return n.clockBase.Add(time.Duration(ns)) }
	if n.servingShown && (prev <= now || until <= now) {
		n.servingShown = false
		n.lapsedAt = clock(min(prev, now))
		n.lapseLogged = false
		if st := status(); st != membership.Up { // leaving, downed, removed: no lapse
			n.lapseLogged = true
			n.log.Info("stopped serving", "status", st.String(), "since", n.lapsedAt.Format(time.RFC3339Nano))
		}
		if n.cfg.ServingChanged != nil {
			n.cfg.ServingChanged(false, n.lapsedAt)
		}
	}
	switch {
	case !n.servingShown && until > now:
		n.servingShown = true
		at := clock(now)
		switch {
		case n.lapsedAt.IsZero():
			n.log.Info("serving: Up and heard by a majority of the members")
		case n.lapseLogged:
			n.log.Info("serving again: Up and heard by a majority of the members", "after", at.Sub(n.lapsedAt).Round(time.Millisecond).String())
		default:
			n.log.Debug("serving again after a short lapse", "after", at.Sub(n.lapsedAt).Round(time.Millisecond).String())
		}
		n.lapsedAt, n.lapseLogged = time.Time{}, false
		if n.cfg.ServingChanged != nil {
			n.cfg.ServingChanged(true, at)
		}
	case !n.servingShown && !n.lapseLogged && !n.lapsedAt.IsZero() && clock(now).Sub(n.lapsedAt) >= lapseWarnAfter:
		n.lapseLogged = true
		n.log.Warn("not serving: no agreeing heartbeats from a majority of the members within acceptable-heartbeat-pause (cut off, or this process was paused); its entities wait",
			"since", n.lapsedAt.Format(time.RFC3339Nano))
	}
}

// awaitServing blocks an entity worker until this member may serve; false when it stops.
func (n *Node) awaitServing() bool {
	for {
		if int64(time.Since(n.clockBase)) < n.servingUntil.Load() {
			return true
		}
		n.servingMu.Lock()
		ch := n.servingCh
		n.servingMu.Unlock()
		select {
		case <-ch:
		case <-n.ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
		if n.ctx.Err() != nil {
			return false
		}
	}
}

// react connects to members as they appear and stops the member when the machine says so.
func (n *Node) react(ev membership.Event) {
	switch e := ev.(type) {
	case membership.MemberChanged:
		if e.Member.Node == n.self.Node || e.Member.Status >= membership.Down {
			return
		}
		id, err := peer.Decode(string(e.Member.Node))
		if err != nil {
			n.log.Warn("member with an invalid peer id", "member", e.Member.Node, "err", err)
			return
		}
		var addrs []multiaddr.Multiaddr
		for _, a := range e.Member.Addrs {
			if ma, err := multiaddr.NewMultiaddr(a); err == nil {
				if t, _ := peer.SplitAddr(ma); t != nil {
					addrs = append(addrs, t)
				}
			}
		}
		n.host.AddAddrs(id, addrs)
		if e.New {
			n.out.connect(id)
		}
	case membership.Stopped:
		go n.stop(&e)
	}
}

// join dials the seeds in the background and asks the machine to join through each one that
// answers; with no seeds (or only this member itself) it forms a new cluster.
func (n *Node) join() {
	var seeds []multiaddr.Multiaddr
	for _, s := range n.cfg.Join {
		ma, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			n.log.Error("bad --join address, ignored", "addr", s, "err", err)
			continue
		}
		if info, err := peer.AddrInfoFromP2pAddr(ma); err == nil && info.ID == n.host.ID() {
			continue // this member itself
		}
		seeds = append(seeds, ma)
	}
	if len(seeds) == 0 {
		n.log.Info("no seed to join: forming a new cluster", "last_cluster_size", n.self.LastClusterSize)
		n.command(func(now time.Time) { n.eng.FormCluster(now) })
		return
	}
	for _, seed := range seeds {
		n.wg.Add(1)
		go n.dialSeed(seed)
	}
}

// dialSeed connects to a seed, retrying with backoff until this member has joined.
func (n *Node) dialSeed(seed multiaddr.Multiaddr) {
	defer n.wg.Done()
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if v := n.view.Load(); v != nil && v.Joined {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
		id, err := n.host.Connect(ctx, seed)
		cancel()
		if err == nil {
			n.command(func(now time.Time) { n.eng.JoinVia(now, membership.NodeID(id.String())) })
			return
		}
		if n.ctx.Err() != nil {
			return
		}
		level := slog.LevelWarn
		if attempt > 1 && !errors.Is(err, p2p.ErrHandshake) {
			level = slog.LevelDebug
		}
		n.log.Log(n.ctx, level, "cannot reach seed; retrying", "seed", seed.String(), "attempt", attempt, "err", err, "why", p2p.DiagnoseDial(seed, err))
		select {
		case <-time.After(backoff):
		case <-n.ctx.Done():
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// discover joins members found by mDNS.
func (n *Node) discover() {
	defer n.wg.Done()
	found := n.host.Discovered()
	for {
		select {
		case <-n.ctx.Done():
			return
		case info, ok := <-found:
			if !ok {
				return
			}
			if info.ID == n.host.ID() {
				continue
			}
			n.host.AddAddrs(info.ID, info.Addrs)
			ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
			err := n.host.LibP2P().Connect(ctx, info)
			cancel()
			if err == nil {
				id := membership.NodeID(info.ID.String())
				n.command(func(now time.Time) { n.eng.JoinVia(now, id) })
			}
		}
	}
}

// View is a consistent snapshot of the membership as this member sees it, safe to read from
// any goroutine.
type View struct {
	Self        membership.NodeID
	Joined      bool
	Members     []membership.Member
	Unreachable []membership.NodeID
	Leader      membership.NodeID
	Oldest      membership.NodeID
	Converged   bool
	// RestartNeed and RestartJoined: a restarted cluster moves no member Up before
	// RestartNeed members have joined (membership.Node.RestartQuorum; RestartWait says it
	// in words); RestartJoined have. RestartNeed is 0 when it does not wait.
	RestartNeed, RestartJoined int

	// replicas are the peer ids of the members whose replicas count in store quorums
	// (replicaMembers), decoded once per change of membership, not per store round;
	// replicaNodes the members they are of.
	replicas     []peer.ID
	replicaNodes []membership.NodeID
	// voters are the peer ids of the membership's whole of voters (membership.VoterWhole):
	// the replicas of the split-brain resolver's lease (store.go).
	voters []peer.ID
}

// View returns the latest snapshot.
func (n *Node) View() *View { return n.view.Load() }

func (n *Node) publishView() {
	m := n.eng.Membership()
	v := &View{Self: n.self.Node, Joined: m.Joined(), Members: m.Members(), Leader: m.Leader(), Converged: m.Convergence()}
	v.RestartNeed, v.RestartJoined = m.RestartQuorum()
	if o, ok := m.Oldest(""); ok {
		v.Oldest = o.Node
	}
	for _, mem := range v.Members {
		if m.Unreachable(mem.Node) {
			v.Unreachable = append(v.Unreachable, mem.Node)
		}
	}
	slices.Sort(v.Unreachable)
	v.replicas, v.replicaNodes = replicasOf(v.Members, n.view.Load())
	v.voters = votersOf(m.VoterWhole(), n.view.Load())
	n.view.Store(v)
	n.noteClusterSize(m)
	n.warnRestartQuorum(v)
	n.metrics.recordView(v)
}
