package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
)

// Protocol ids of the member-to-member protocols.
const (
	MemberProtocol = "/shardmesh/member/1"
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
	// Membership configures the membership machine.
	Membership membership.Config
	// TickInterval is how often the machines are ticked; default 100 ms.
	TickInterval time.Duration
	// Logger receives the member's logs; default slog.Default().
	Logger *slog.Logger
}

// Node is a running member.
type Node struct {
	cfg  Config
	log  *slog.Logger
	dir  *dataDir
	host *p2p.Host
	self membership.Member

	gossip *p2p.Topic
	sub    *p2p.Subscription

	m      *membership.Node // owned by the loop goroutine
	inbox  chan inbound
	cmds   chan func(now time.Time)
	out    *outboxes
	view   atomic.Pointer[View]
	subsMu sync.Mutex
	subs   map[chan membership.Event]struct{}

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
	stopped  atomic.Pointer[membership.Stopped]
	wg       sync.WaitGroup
}

type inbound struct {
	from membership.NodeID
	msg  membership.Message
}

// Start opens the data directory, starts the libp2p host, and starts joining (or forming)
// the cluster. It returns once the member listens; joining goes on in the background.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.TickInterval == 0 {
		cfg.TickInterval = 100 * time.Millisecond
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = "shardmesh"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.Membership.Validate(); err != nil {
		return nil, err
	}
	dir, err := openDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			dir.close()
		}
	}()
	key, err := p2p.LoadOrCreateIdentity(dir.file(identityFile))
	if err != nil {
		return nil, err
	}
	incarnation, err := dir.nextIncarnation()
	if err != nil {
		return nil, err
	}
	host, err := p2p.New(ctx, p2p.Config{
		Identity:    key,
		ListenAddrs: cfg.Listen,
		ClusterKey:  cfg.ClusterKey,
		AllowPeers:  cfg.AllowPeers,
		MDNS:        cfg.MDNS,
		MDNSTag:     "shardmesh-" + cfg.ClusterName,
		Logger:      cfg.Logger.With("component", "p2p"),
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
	}
	topic, err := host.Join("/shardmesh/" + cfg.ClusterName + "/membership/1")
	if err != nil {
		return nil, err
	}
	sub, err := topic.Subscribe()
	if err != nil {
		return nil, err
	}
	nctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		cfg:    cfg,
		log:    cfg.Logger.With("node", self.Node.Short()),
		dir:    dir,
		host:   host,
		self:   self,
		gossip: topic,
		sub:    sub,
		m:      membership.New(cfg.Membership, self, time.Now()),
		inbox:  make(chan inbound, 4096),
		cmds:   make(chan func(time.Time), 64),
		subs:   map[chan membership.Event]struct{}{},
		ctx:    nctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	n.out = newOutboxes(nctx, host, n.log)
	host.Handle(MemberProtocol, n.handleMemberFrame)
	n.publishView()
	if err := dir.writeAddrs(addrs); err != nil {
		cancel()
		return nil, fmt.Errorf("write %s: %w", dir.file(addrsFile), err)
	}
	ok = true
	n.log.Info("member started", "peer", self.Node, "incarnation", incarnation, "addrs", addrs, "roles", cfg.Roles, "app_version", cfg.AppVersion)
	n.wg.Add(3)
	go n.loop()
	go n.receiveGossip()
	go n.discover()
	n.join()
	return n, nil
}

// ID returns this member's node id.
func (n *Node) ID() membership.NodeID { return n.self.Node }

// Self returns this member as it introduced itself.
func (n *Node) Self() membership.Member { return n.self }

// Host returns the libp2p host, for the protocols layered on this member (admin, sharding).
func (n *Node) Host() *p2p.Host { return n.host }

// Done is closed when the member has stopped: it left, was downed or removed, or Close was
// called.
func (n *Node) Done() <-chan struct{} { return n.done }

// StopReason says why the member stopped, or nil while it runs or when closed by Close.
func (n *Node) StopReason() *membership.Stopped { return n.stopped.Load() }

// Leave leaves the cluster gracefully and waits until the member is removed (or ctx ends).
func (n *Node) Leave(ctx context.Context) error {
	select {
	case n.cmds <- func(now time.Time) { n.m.Leave(now) }:
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
	select {
	case n.cmds <- func(now time.Time) { res <- n.m.Down(now, node) }:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case ok := <-res:
		if !ok {
			return fmt.Errorf("%s is not a current member", node)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Subscribe returns a channel of membership events (buffered; a subscriber that falls
// behind loses events, never blocks the member) and a function to unsubscribe.
func (n *Node) Subscribe() (<-chan membership.Event, func()) {
	ch := make(chan membership.Event, 256)
	n.subsMu.Lock()
	n.subs[ch] = struct{}{}
	n.subsMu.Unlock()
	return ch, func() {
		n.subsMu.Lock()
		delete(n.subs, ch)
		n.subsMu.Unlock()
	}
}

// Close stops the member at once, without leaving (as a crash would, but releasing the data
// directory).
func (n *Node) Close() error {
	n.stop(nil)
	n.wg.Wait()
	err := n.host.Close()
	n.dir.close()
	return err
}

func (n *Node) stop(reason *membership.Stopped) {
	n.stopOnce.Do(func() {
		if reason != nil {
			n.stopped.Store(reason)
		}
		n.cancel()
		close(n.done)
	})
}

// loop is the one goroutine that owns the machine.
func (n *Node) loop() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.TickInterval)
	defer tick.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
			n.m.Tick(time.Now())
			n.publishView() // convergence and reachability change without events
		case in := <-n.inbox:
			n.m.Step(time.Now(), in.from, in.msg)
		case cmd := <-n.cmds:
			cmd(time.Now())
		}
		n.execute(n.m.Ready())
	}
}

// execute carries out what the machine asked for.
func (n *Node) execute(rd membership.Ready) {
	for _, env := range rd.Messages {
		n.send(env)
	}
	if len(rd.Events) == 0 {
		return
	}
	n.publishView()
	for _, ev := range rd.Events {
		n.logEvent(ev)
		n.react(ev)
		n.subsMu.Lock()
		for ch := range n.subs {
			select {
			case ch <- ev:
			default:
			}
		}
		n.subsMu.Unlock()
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

func (n *Node) logEvent(ev membership.Event) {
	switch e := ev.(type) {
	case membership.MemberChanged:
		n.log.Info("member "+e.Member.Status.String(), "member", e.Member.Node, "incarnation", e.Member.Incarnation, "up_number", e.Member.UpNumber, "roles", e.Member.Roles, "app_version", e.Member.AppVersion)
	case membership.ReachabilityChanged:
		if e.Reachable {
			n.log.Info("member reachable again", "member", e.Node)
		} else {
			n.log.Warn("member unreachable", "member", e.Node)
		}
	case membership.LeaderChanged:
		n.log.Info("leader changed", "leader", e.Leader)
	case membership.Downed:
		n.log.Warn("split-brain resolver decision", "downed", e.Nodes, "side", e.Side, "others", e.Others, "strategy", e.Strategy, "reason", e.Reason)
	case membership.Suspended:
		n.log.Warn("paused or cut off from the majority: serving nothing until a majority confirms this member")
	case membership.Resumed:
		n.log.Info("a majority confirmed this member; serving again")
	case membership.Stopped:
		level := slog.LevelError
		if e.Reason == membership.StopLeft {
			level = slog.LevelInfo
		}
		n.log.Log(context.Background(), level, "member stopped: "+e.Detail, "reason", e.Reason.String())
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
		n.log.Info("no seed to join: forming a new cluster")
		n.command(func(now time.Time) { n.m.FormCluster(now) })
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
			n.command(func(now time.Time) { n.m.JoinVia(now, membership.NodeID(id.String())) })
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
				n.command(func(now time.Time) { n.m.JoinVia(now, id) })
			}
		}
	}
}

// command runs fn on the loop goroutine.
func (n *Node) command(fn func(time.Time)) {
	select {
	case n.cmds <- fn:
	case <-n.ctx.Done():
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
}

// View returns the latest snapshot.
func (n *Node) View() *View { return n.view.Load() }

func (n *Node) publishView() {
	v := &View{Self: n.self.Node, Joined: n.m.Joined(), Members: n.m.Members(), Leader: n.m.Leader(), Converged: n.m.Convergence()}
	if o, ok := n.m.Oldest(""); ok {
		v.Oldest = o.Node
	}
	for _, m := range v.Members {
		if n.m.Unreachable(m.Node) {
			v.Unreachable = append(v.Unreachable, m.Node)
		}
	}
	slices.Sort(v.Unreachable)
	n.view.Store(v)
}
