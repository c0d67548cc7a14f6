package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/internal/mailbox"
	"github.com/shardmesh/shardmesh/lease"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/trust"
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
	// ClusterKey is the private-network key; nil: an open mesh, refused on an address other
	// than loopback unless OpenMesh.
	ClusterKey pnet.PSK
	// AcceptKeys are further cluster keys accepted from connecting peers (p2p.Config.AcceptKeys).
	AcceptKeys []pnet.PSK
	// OpenMesh allows listening beyond loopback without a ClusterKey (p2p.Config.OpenMesh).
	OpenMesh bool
	// OperatorNetworks are where shardctl connects from (p2p.Config.OperatorNetworks);
	// nil: this host.
	OperatorNetworks []netip.Prefix
	// Trust is what this member trusts: the cluster authorities whose credentials admit
	// members and admins, and the admin identities it allows by peer id (package trust).
	// Nil: open admission (any key holder can join) and no admin.
	Trust *trust.Policy
	// Credential is this member's member credential (trust.Credential.Raw), presented when
	// it joins; needed when Trust has an authority.
	Credential []byte
	// AdminIdentity, when set, signs the directives this member's program changes
	// (ChangeDirective: System.PinShard); a member with admins follows only signed ones.
	AdminIdentity crypto.PrivKey
	// ClusterName names the gossip topics; default "shardmesh".
	ClusterName string
	// Roles and AppVersion describe this member to the cluster.
	Roles      []string
	AppVersion string
	// AllowPeers, when set, is the only set of peers this member talks to.
	AllowPeers []peer.ID
	// MDNS turns on local-network discovery.
	MDNS bool
	// Discovery, when set and Join is empty, finds the members to join and decides when
	// this member forms a new cluster (discovery.go); nil: with no Join it forms at once.
	Discovery Discovery
	// ForgetLastCluster: the member does not read <data-dir>/last-cluster-size and joins as
	// a new one (cluster.forget-last-cluster; clustersize.go).
	ForgetLastCluster bool
	// Membership configures the membership machine.
	Membership membership.Config
	// Workers runs entities: how many goroutines (default 2 × GOMAXPROCS) and how many
	// messages one entity handles before yielding (default 32).
	Workers mailbox.Config
	// ShutdownTimeout bounds the graceful handoff when leaving; default
	// engine.DefaultShutdownTimeout (60 s: reference.conf's handoff-timeout).
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
	// Tracing, when set, records OpenTelemetry spans of the messages' ways, their trace
	// context carried across members (tracing.go); nil: off, at the cost of a nil check.
	Tracing trace.TracerProvider
}

// DefaultConfig returns a Config with every default filled in; DataDir is left to set.
func DefaultConfig() Config {
	return Config{
		Listen:          []string{"/ip4/127.0.0.1/tcp/0"},
		ClusterName:     "shardmesh",
		Membership:      membership.DefaultConfig(),
		ShutdownTimeout: engine.DefaultShutdownTimeout,
		TickInterval:    100 * time.Millisecond,
		Logger:          slog.Default(),
	}
}

// Validate fills zero fields with their defaults (those of DefaultConfig) and rejects what
// cannot work, naming the field.
func (c *Config) Validate() error {
	def := DefaultConfig()
	if c.TickInterval == 0 {
		c.TickInterval = def.TickInterval
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = def.ShutdownTimeout
	}
	if c.ClusterName == "" {
		c.ClusterName = def.ClusterName
	}
	if c.Logger == nil {
		c.Logger = def.Logger
	}
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("node config: DataDir is required"))
	}
	if c.TickInterval < 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("node config: TickInterval %v and ShutdownTimeout %v must not be negative", c.TickInterval, c.ShutdownTimeout))
	}
	if err := c.Membership.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Workers.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Membership.SplitBrainResolver.ActiveStrategy == membership.LeaseMajority && c.ResolverLease == nil {
		errs = append(errs, errors.New("node config: split-brain-resolver.active-strategy = lease-majority needs a lease (ResolverLease)"))
	}
	return errors.Join(errs...)
}

// Node is a running member: a Core driven by one loop goroutine, with libp2p, Badger, the
// entity workers and the data directory behind its Env (nodeEnv).
type Node struct {
	cfg   Config
	log   *slog.Logger
	dir   *datadir.Dir
	host  *p2p.Host
	gate  *trust.Gate     // what the core and the store refuse, told; gossip admitted (admission.go)
	store *remember.Store // remembered entities and durable entity state, replicated
	// prefetch holds starting entities' states read early (prefetch.go).
	prefetch statePrefetches
	self     membership.Member
	core     *Core // owned by the loop goroutine, but for what it says is safe elsewhere

	gossip    *p2p.Topic
	sub       *p2p.Subscription
	events    *p2p.Topic
	eventsSub *p2p.Subscription
	eventsOut chan []byte // sharding events to publish, in order

	pool     *mailbox.Pool
	groups   sync.Map      // type name → *mailbox.Group[*Message]
	runnable mailbox.Batch // entities the loop gave messages since its last flush (loop goroutine)

	metrics *metrics // nil without Config.Metrics

	inbox      chan Input
	deliveries *deliveries // messages for entities: the loop's other inbox
	out        *outboxes

	// servingUntil is the lease deadline for entities, on the monotonic clock: nanoseconds
	// since clockBase. Reading only the monotonic clock is cheaper than time.Now, and a
	// wall-clock step cannot stretch the lease.
	servingUntil atomic.Int64
	clockBase    time.Time
	servingMu    sync.Mutex
	servingCh    chan struct{} // closed when serving may have started

	tickDue atomic.Bool // a tick is due: the ticker set it and woke the loop
	// A tick the core wants before the periodic ones (Core.TickDue), owned by the loop: when,
	// and the timer that wakes the loop then.
	tickAt    time.Time
	tickTimer *time.Timer

	// The size of the cluster this member is Up in, kept on disk (clustersize.go): the size
	// to write (stored by the loop only), and a write due.
	sizeLatest atomic.Uint32
	sizeDue    chan struct{}

	subsMu sync.Mutex
	subs   map[chan Event]struct{}

	leases leases // the local shards' leases (use-lease)
	// resolverLease is the split-brain resolver's lease (lease-majority), made at its first
	// use; owned by the loop goroutine.
	resolverLease lease.Lease

	names          sync.Map            // peer.ID → membership.NodeID: a peer id's text form, encoded once
	namesKept      atomic.Int64        // entries in names (bounded by maxNames)
	gateAdmitted   []membership.NodeID // the admitted members last given to the gate (loop goroutine)
	storePlacement *remember.Placement // the placement as of the store's last nudge (loop goroutine)
	auditWrites    atomic.Uint64       // audit records written here (audit.go)

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
	stopped  atomic.Pointer[membership.Stopped]
	failure  atomic.Pointer[error] // why the member failed (storage.go)

	storeFull bool // the store refuses writes for want of disk space, as the engine was told (loop goroutine)
	wg        sync.WaitGroup
}

// nodeEnv is Node as its Core's Env: the methods the Core calls to act on the world.
type nodeEnv Node

// Start opens the data directory, starts the libp2p host, and starts joining (or forming)
// the cluster. It returns once the member listens; joining goes on in the background.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
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
		Identity:         key,
		ListenAddrs:      cfg.Listen,
		ClusterKey:       cfg.ClusterKey,
		AcceptKeys:       cfg.AcceptKeys,
		OpenMesh:         cfg.OpenMesh,
		OperatorNetworks: cfg.OperatorNetworks,
		AllowPeers:       cfg.AllowPeers,
		MDNS:             cfg.MDNS,
		MDNSTag:          "shardmesh-" + cfg.ClusterName,
		Logger:           log.With("component", "p2p"),
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			host.Close()
		}
	}()
	gate, err := newGate(&cfg, pid, host, log)
	if err != nil {
		return nil, err
	}
	cfg.Membership.Credential = cfg.Credential
	if cfg.Trust.Admission() {
		cfg.Membership.Admit = admitFunc(cfg.Trust, gate)
	}
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
	if err := topic.Gate(gate); err != nil {
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
	if err := events.Gate(gate); err != nil {
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
		metrics:    met,
		cfg:        cfg,
		log:        log,
		dir:        dir,
		host:       host,
		gate:       gate,
		self:       self,
		gossip:     topic,
		sub:        sub,
		events:     events,
		eventsSub:  eventsSub,
		eventsOut:  make(chan []byte, 4096),
		pool:       pool,
		inbox:      make(chan Input, 65536),
		deliveries: newDeliveries(),
		subs:       map[chan Event]struct{}{},
		servingCh:  make(chan struct{}),
		sizeDue:    make(chan struct{}, 1),
		clockBase:  time.Now(),
		ctx:        nctx,
		cancel:     cancel,
		done:       make(chan struct{}),
	}
	n.out = newOutboxes(nctx, host, n.log, met)
	n.core = NewCore(CoreConfig{Membership: cfg.Membership, ShutdownTimeout: cfg.ShutdownTimeout, ClusterName: cfg.ClusterName,
		History: cfg.History, Logger: log, Metrics: met, ServingChanged: cfg.ServingChanged, ReplicationFactor: cfg.Store.ReplicationFactor,
		Trust: cfg.Trust, Tracer: tracerOf(cfg.Tracing)}, self, n.env(), time.Now())
	n.syncGate()
	// The core admits what these carry, or not (core_admission.go).
	host.Handle(MemberProtocol, n.handleMemberFrame)
	host.Handle(CoordProtocol, n.handleCoordFrame)
	host.HandleSinks(RegionProtocol, n.newRegionSink)
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
	for _, w := range n.Warnings() {
		n.log.Warn(w)
	}
	n.wg.Add(6)
	go n.loop()
	go n.writeClusterSize()
	go n.receiveGossip()
	go n.discover()
	go n.publishEvents()
	go n.receiveEvents()
	n.join()
	return n, nil
}

func (n *Node) env() *nodeEnv { return (*nodeEnv)(n) }

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
	if spec.Settings.Shard.Lease.Enabled && n.leases.provider == nil {
		return fmt.Errorf("entity type %q: its shards use a lease (use-lease) but this member has no lease provider", spec.Name)
	}
	group, err := mailbox.NewGroup[*Message](n.pool, mailbox.GroupConfig{})
	if err != nil {
		return err
	}
	if _, dup := n.groups.LoadOrStore(spec.Name, group); dup {
		return fmt.Errorf("entity type %q is already registered", spec.Name)
	}
	res := make(chan error, 1)
	if err := n.input(context.Background(), RegisterType{Spec: spec, Done: func(err error) { res <- err }}); err != nil {
		return err
	}
	select {
	case err := <-res:
		if err != nil {
			n.groups.Delete(spec.Name)
		}
		return err
	case <-n.done:
		return ErrStopped
	}
}

// Tell sends msg to entity id of entity type typ, without waiting for it to be handled.
func (n *Node) Tell(typ string, id string, msg any) error {
	t, err := n.core.Sender(typ)
	if err != nil {
		return err
	}
	m := &Message{value: msg}
	span := n.core.startSend(context.Background(), "tell", typ, id, m)
	err = n.deliver(context.Background(), t, id, m)
	endSpan(span, err)
	return err
}

// Ask sends msg to entity id of entity type typ and waits for its reply or ctx.
func (n *Node) Ask(ctx context.Context, typ string, id string, msg any) (any, error) {
	t, err := n.core.Sender(typ)
	if err != nil {
		return nil, err
	}
	r, err := n.ask(ctx, t, id, &Message{value: msg})
	if err != nil {
		return nil, err
	}
	if r.Encoded != nil {
		return t.spec.DecodeReply(r.Encoded)
	}
	return r.Value, nil
}

// StartEntity starts entity id of type typ without a message (Akka's StartEntity): its
// shard is allocated if it has no home, the entity's behaviour is created in its home, and
// StartEntity returns once it runs (or ctx ends). An entity that runs already is left as it
// is.
func (n *Node) StartEntity(ctx context.Context, typ string, id string) error {
	t, err := n.core.Sender(typ)
	if err != nil {
		return err
	}
	_, err = n.ask(ctx, t, id, &Message{startEn: true, encoded: []byte{}})
	return err
}

// TellEncoded sends a message already in the entity type's message codec (from tools).
func (n *Node) TellEncoded(typ string, id string, payload []byte) error {
	t, err := n.checkEncoded(typ, payload)
	if err != nil {
		return err
	}
	m := NewEncodedMessage(payload, nil)
	span := n.core.startSend(context.Background(), "tell", typ, id, m)
	err = n.deliver(context.Background(), t, id, m)
	endSpan(span, err)
	return err
}

// checkEncoded returns type typ's runtime once payload decodes in its message codec: a
// tool's message is checked where it enters, since a tell's failure reaches nobody.
func (n *Node) checkEncoded(typ string, payload []byte) (*RegisteredType, error) {
	t, err := n.core.Sender(typ)
	if err != nil {
		return nil, err
	}
	if _, err := t.spec.DecodeMessage(payload); err != nil {
		return nil, fmt.Errorf("message for %s: %w: %w", typ, ErrUndecodable, err)
	}
	return t, nil
}

// AskEncoded asks with a message in the type's message codec and returns the reply in the
// type's reply codec (from tools).
func (n *Node) AskEncoded(ctx context.Context, typ string, id string, payload []byte) ([]byte, error) {
	t, err := n.checkEncoded(typ, payload)
	if err != nil {
		return nil, err
	}
	r, err := n.ask(ctx, t, id, NewEncodedMessage(payload, nil))
	if err != nil || r.Encoded != nil || r.Value == nil {
		return r.Encoded, err
	}
	return t.spec.EncodeReply(r.Value)
}

func (n *Node) ask(ctx context.Context, t *RegisteredType, id string, m *Message) (r Reply, err error) {
	if span := n.core.startSend(ctx, "ask", t.spec.Name, id, m); span != nil {
		defer func() { endSpan(span, err) }()
	}
	start := t.m.askStart()
	p := n.core.asks.create()
	m.ask = p
	if err := n.deliver(ctx, t, id, m); err != nil {
		t.m.asked(start, err, ctx.Err() != nil, errors.Is(err, ErrStopped))
		return Reply{}, err
	}
	select {
	case r := <-p.result:
		n.core.asks.forget(p)
		t.m.asked(start, r.Err, false, false)
		return r, r.Err
	case <-ctx.Done():
		n.core.asks.forget(p)
		t.m.asked(start, nil, true, false)
		return Reply{}, fmt.Errorf("ask %s %s: %w", t.spec.Name, id, ctx.Err())
	case <-n.done:
		t.m.asked(start, nil, false, true)
		return Reply{}, ErrStopped
	}
}

// deliver hands a message to the loop, after taking one of the type's credits (see
// maxInflight).
func (n *Node) deliver(ctx context.Context, t *RegisteredType, id string, m *Message) error {
	in, err := NewDeliver(t, id, m)
	if err != nil {
		return err
	}
	if err := t.credits.acquire(ctx, n.done); err != nil {
		if errors.Is(err, ErrStopped) {
			return err
		}
		return fmt.Errorf("send to %s %s: waited for room (%d messages of the type in flight here, the bound is min(buffer-size, %d)): %w",
			t.spec.Name, id, t.credits.limit, maxInflight, err)
	}
	m.credits = t.credits
	if n.ctx.Err() != nil {
		m.credits.release()
		return ErrStopped
	}
	n.deliveries.push(in)
	return nil
}

// Leave hands off every shard, leaves the cluster gracefully and waits until the member is
// removed (or ctx ends).
func (n *Node) Leave(ctx context.Context) error {
	select {
	case n.inbox <- Leave{}:
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
	res := make(chan bool, 1)
	if err := n.input(ctx, Down{Node: node, Done: func(ok bool) { res <- ok }}); err != nil {
		return err
	}
	select {
	case ok := <-res:
		if !ok {
			return fmt.Errorf("%s is not a current member", node)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
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
		n.core.asks.failAll(ErrStopped)
		n.servingMu.Lock()
		close(n.servingCh)
		n.servingMu.Unlock()
	})
}

// input hands in to the loop, waiting for room; an error when ctx ends or the member stops
// first.
func (n *Node) input(ctx context.Context, in Input) error {
	select {
	case n.inbox <- in:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
}

// post hands in to the loop from a goroutine of the member's own (entity workers, lease
// and store calls), waiting for room unless the member stops.
func (n *Node) post(in Input) {
	select {
	case n.inbox <- in:
	case <-n.ctx.Done():
	}
}

// loop is the one goroutine that drives the core.
//
// It waits on two channels only — the deliveries' wake-up and the inbox — since a select
// costs in proportion to its cases and the loop wakes once or twice per message at low
// load: the ticker and the member's stop set a flag and wake it through the deliveries.
func (n *Node) loop() {
	defer n.wg.Done()
	defer func() {
		if n.tickTimer != nil {
			n.tickTimer.Stop()
		}
	}()
	n.wg.Add(1)
	go n.ticks()
	c := n.core
	for {
		var in Input
		select {
		case <-n.deliveries.wake:
		case in = <-n.inbox:
		}
		if n.ctx.Err() != nil {
			return
		}
		now := time.Now()
		if n.tickDue.Swap(false) {
			n.noteStoreSpace(now)
			n.deliveries.idle()
			c.Tick(now)
		}
		n.stepDeliveries(now) // with an input: what a goroutine queued before it comes first
		if in != nil {
			c.Step(now, in)
			// Take what else is waiting before carrying anything out: one pass over many
			// inputs.
			for i := 0; i < 256; i++ {
				select {
				case in := <-n.inbox:
					n.stepDeliveries(now)
					c.Step(now, in)
					continue
				default:
				}
				break
			}
			n.stepDeliveries(now)
		}
		n.flush()
		n.syncGate()
		n.armTick(c.TickDue())
	}
}

// armTick wakes the loop for a tick at due (Core.TickDue), once for each due time.
func (n *Node) armTick(due time.Time) {
	if due.IsZero() || due.Equal(n.tickAt) {
		return
	}
	n.tickAt = due
	if n.tickTimer == nil {
		n.tickTimer = time.AfterFunc(time.Until(due), func() {
			n.tickDue.Store(true)
			n.deliveries.signal()
		})
		return
	}
	n.tickTimer.Reset(time.Until(due))
}

// syncGate gives the gate the membership when the members admitted changed, and tells the
// store when those or the placement (who holds what in it) changed.
func (n *Node) syncGate() {
	v := n.core.View()
	admitted, placement := v.Admitted(), v.Placement()
	gate := !sameSlice(admitted, n.gateAdmitted)
	if !gate && placement == n.storePlacement {
		return
	}
	if gate {
		n.gate.SetMembers(v.Members)
	}
	n.gateAdmitted, n.storePlacement = admitted, placement
	if n.store != nil {
		n.store.MembersChanged() // frames of a member admitted now may wait there
	}
}

// sameSlice reports whether a and b are the same slice (the view hands back the same one
// while its members do not change).
func sameSlice(a, b []membership.NodeID) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Refused tells the gate of what a peer that is not an admitted member sent (Env).
func (e *nodeEnv) Refused(from membership.NodeID, proto protocol.ID, _ Input) {
	(*Node)(e).refused(from, proto)
}

// refused tells the gate of a frame of proto from a peer that is not an admitted member.
func (n *Node) refused(from membership.NodeID, proto protocol.ID) {
	if id, err := peer.Decode(string(from)); err == nil {
		n.gate.Refused(id, proto)
	}
}

// ticks wakes the loop every TickInterval for its tick, until the member stops.
func (n *Node) ticks() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			n.deliveries.signal() // the loop sees the member stop
			return
		case <-t.C:
			n.tickDue.Store(true)
			n.deliveries.signal()
		}
	}
}

// flush carries out what the core decided, and hands the entities that got messages to the
// workers in one go.
func (n *Node) flush() {
	n.core.Flush()
	n.runnable.Schedule()
}

// deliveriesPerFlush bounds the messages stepped between two Flushes of a long queue, so
// that entity workers and outboxes get their work while the loop goes on, and what the
// engine holds for one Flush stays small.
const deliveriesPerFlush = 1024

// stepDeliveries steps every message queued for entities, in order.
func (n *Node) stepDeliveries(now time.Time) {
	q := n.deliveries.take()
	c := n.core
	for i := range q {
		if i > 0 && i%deliveriesPerFlush == 0 {
			n.flush()
		}
		c.Deliver(now, q[i])
	}
	n.deliveries.giveBack(q)
}

// Serving publishes the lease deadline to the entity workers and wakes those waiting (Env).
func (e *nodeEnv) Serving(until time.Time) {
	n := (*Node)(e)
	u := int64(0)
	if !until.IsZero() {
		u = int64(until.Sub(n.clockBase))
	}
	prev := n.servingUntil.Swap(u)
	now := int64(time.Since(n.clockBase))
	if u > now && prev <= now {
		n.servingMu.Lock()
		close(n.servingCh)
		n.servingCh = make(chan struct{})
		n.servingMu.Unlock()
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

// Connect makes a member reachable and dials a new one (Env).
func (e *nodeEnv) Connect(m membership.Member, isNew bool) {
	n := (*Node)(e)
	id, err := peer.Decode(string(m.Node))
	if err != nil {
		n.log.Warn("member with an invalid peer id", "member", m.Node, "err", err)
		return
	}
	var addrs []multiaddr.Multiaddr
	for _, a := range m.Addrs {
		if ma, err := multiaddr.NewMultiaddr(a); err == nil {
			if t, _ := peer.SplitAddr(ma); t != nil {
				addrs = append(addrs, t)
			}
		}
	}
	n.host.AddAddrs(id, addrs)
	if isNew {
		n.out.connect(id)
	}
}

// Stopped stops the member (Env): it left, or was downed or removed.
func (e *nodeEnv) Stopped(s membership.Stopped) { go (*Node)(e).stop(&s) }

// Store carries out a store request of the core on its own goroutine; the answer comes back
// to the loop (Env).
func (e *nodeEnv) Store(id uint64, req StoreRequest) {
	n := (*Node)(e)
	if len(req.Prefetch) > 0 {
		n.prefetch.start(time.Now(), req.Prefetch, func(key string, epoch uint64) (rec remember.Record, found bool, err error) {
			err = errPrefetchFailed // what a panic, caught, leaves: the incarnation reads for itself
			defer n.caught("a state prefetch")
			if err := n.servingFor(n.ctx); err != nil {
				return remember.Record{}, false, err
			}
			return n.store.GetFenced(n.ctx, key, epoch)
		})
	}
	go func() {
		defer n.caught("a store request")
		var res StoreResult
		switch {
		case req.Writes != nil:
			res.Err = n.store.Write(n.ctx, req.Writes...)
		case req.IsScan:
			res.Records, res.Err = n.store.Scan(n.ctx, req.Scan)
		default:
			if req.Fence > 0 {
				res.Record, res.Found, res.Err = n.store.GetFenced(n.ctx, req.Get, req.Fence)
			} else {
				res.Record, res.Found, res.Err = n.store.Get(n.ctx, req.Get)
			}
		}
		n.post(StoreDone{ID: id, Result: res})
	}()
}

// HostShard tells the store this member hosts, or no longer hosts, a shard (Env).
func (e *nodeEnv) HostShard(u remember.Unit, epoch uint64, hosted bool) {
	if hosted {
		e.store.Host(u, epoch)
	} else {
		e.store.Unhost(u)
	}
}

// CareFor has the store look after the replica sets of units (Env).
func (e *nodeEnv) CareFor(units []remember.Unit) { e.store.Care(units) }

// View returns the latest membership snapshot.
func (n *Node) View() *View { return n.core.View() }

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
	if len(seeds) == 0 && n.cfg.Discovery != nil {
		n.wg.Add(1)
		go n.discoverByConfig()
		return
	}
	if len(seeds) == 0 {
		n.log.Info("no seed to join: forming a new cluster", "last_cluster_size", n.self.LastClusterSize)
		n.post(FormCluster{})
		return
	}
	// Every seed's peer id: when none of them is in a cluster, the one with the lowest forms
	// one. A seed given without its peer id rules that out (no member knows all the ids).
	var ids []membership.NodeID
	for _, seed := range seeds {
		info, err := peer.AddrInfoFromP2pAddr(seed)
		if err != nil {
			ids = nil
			break
		}
		ids = append(ids, membership.NodeID(info.ID.String()))
	}
	if ids != nil {
		n.post(JoinSeeds{Seeds: ids})
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
		if v := n.core.View(); v != nil && v.Joined {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
		id, err := n.host.Connect(ctx, seed)
		cancel()
		if err == nil {
			n.post(JoinVia{Seed: membership.NodeID(id.String())})
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
				n.post(JoinVia{Seed: id})
			}
		}
	}
}

// tracerOf returns shardmesh's tracer of tp (nil: tracing off).
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(tracerName)
}
