package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	basicconnmgr "github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/x/rate"
	"github.com/multiformats/go-multiaddr"
)

// Host is a shardmesh node's libp2p host. Create it with New; it runs until Close. All
// methods are safe for concurrent use.
type Host struct {
	cfg   Config
	log   *slog.Logger
	h     host.Host
	gater *allowListGater // nil: no allow-list
	stats counters
	conns *connEvents

	ps       *pubsub.PubSub
	life     context.Context // ends when Close starts; pubsub runs under it
	psCancel context.CancelFunc

	mdns       io.Closer          // nil: mDNS off or unavailable
	discovered chan peer.AddrInfo // nil: mDNS off or unavailable

	// Connection limits (limits.go).
	inbound   inbound
	allowlist *rcmgr.Allowlist
	connmgr   *basicconnmgr.BasicConnMgr
	keepMu    sync.Mutex
	kept      map[peer.ID][]multiaddr.Multiaddr // the allow-list entries of each kept peer
	keptIPs   map[netip.Addr]int                // the addresses of kept peers, with how many share each
	connRate  *rate.Limiter                     // new inbound connections per address (limits.go)

	mu      sync.Mutex
	closed  bool
	senders map[senderKey]*sender
	topics  map[string]*Topic

	lastSender atomic.Pointer[sender] // the sender used last, to skip the map
	wg         sync.WaitGroup         // goroutines and handlers that Close waits for
}

// New starts a host listening on cfg.ListenAddrs. It validates cfg (see Config.Validate).
// ctx bounds only the start-up; the host runs until Close.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	self, err := peer.IDFromPrivateKey(cfg.Identity)
	if err != nil {
		return nil, fmt.Errorf("p2p config: Identity: %w", err)
	}
	h := &Host{
		cfg:     cfg,
		log:     cfg.Logger,
		senders: make(map[senderKey]*sender),
		topics:  make(map[string]*Topic),
		kept:    make(map[peer.ID][]multiaddr.Multiaddr),
		keptIPs: make(map[netip.Addr]int),
	}
	h.inbound.h = h
	// TCP only (in limitOptions): a PSK does not work over QUIC or WebTransport, and one
	// transport in both modes keeps behaviour and benchmarks the same.
	limits, err := h.limitOptions()
	if err != nil {
		return nil, fmt.Errorf("start libp2p host: %w", err)
	}
	opts := append([]libp2p.Option{
		libp2p.Identity(cfg.Identity),
		libp2p.ListenAddrStrings(cfg.ListenAddrs...),
		libp2p.Security(noise.ID, noise.New),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
	}, limits...)
	if cfg.DialTimeout > 0 {
		opts = append(opts, libp2p.SwarmOpts(swarm.WithDialTimeout(cfg.DialTimeout), swarm.WithDialTimeoutLocal(cfg.DialTimeout)))
	}
	if len(cfg.AllowPeers) > 0 {
		h.gater = newAllowListGater(append(slices.Clone(cfg.AllowPeers), self))
		opts = append(opts, libp2p.ConnectionGater(h.gater))
	}
	lh, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("start libp2p host: %w", err)
	}
	h.h = lh
	h.conns = newConnEvents(h)
	lh.Network().Notify(h.conns.notifiee())

	life, psCancel := context.WithCancel(context.Background())
	h.life, h.psCancel = life, psCancel
	h.ps, err = pubsub.NewGossipSub(life, lh,
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		// Our own messages go straight to every subscribed peer, not only to the mesh:
		// the cluster is small, and a message published before the first heartbeat has
		// built the mesh would otherwise reach nobody (v0.17 defaults to false).
		pubsub.WithFloodPublish(true),
		pubsub.WithPeerOutboundQueueSize(cfg.GossipQueue),
		pubsub.WithValidateQueueSize(cfg.GossipQueue),
		pubsub.WithLogger(slog.New(quietDeliveryTags{cfg.Logger.Handler()}).With("subsystem", "gossipsub")),
	)
	if err != nil {
		psCancel()
		h.conns.stop()
		_ = lh.Close()
		return nil, fmt.Errorf("start gossipsub: %w", err)
	}
	h.startMDNS()
	h.log.Info("p2p host started", "peer", h.ID(), "addrs", h.Addrs(),
		"private_network", cfg.ClusterKey != nil, "allow_list", len(cfg.AllowPeers))
	return h, nil
}

// ID returns the host's peer id.
func (h *Host) ID() peer.ID { return h.h.ID() }

// Addrs returns the addresses peers can dial to reach this host, each ending in
// /p2p/<id>: one per bound listen address, with port 0 resolved to the real port and an
// unspecified IP (0.0.0.0, ::) expanded to the interface addresses.
func (h *Host) Addrs() []multiaddr.Multiaddr {
	addrs, err := h.h.Network().InterfaceListenAddresses()
	if err != nil {
		addrs = h.h.Network().ListenAddresses()
	}
	suffix, err := multiaddr.NewComponent("p2p", h.ID().String())
	if err != nil {
		panic(fmt.Sprintf("p2p: /p2p component for our own id %s: %v", h.ID(), err))
	}
	out := make([]multiaddr.Multiaddr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.AppendComponent(suffix))
	}
	return out
}

// AddAddrs records addresses where a known member can be dialled, permanently (until
// Close); Send, OpenStream and Connect dial them when no connection is open.
func (h *Host) AddAddrs(id peer.ID, addrs []multiaddr.Multiaddr) {
	h.h.Peerstore().AddAddrs(id, addrs, peerstore.PermanentAddrTTL)
}

// LibP2P returns the underlying libp2p host, for tests and benchmarks. Streams and
// handlers set on it bypass this package's framing, limits and counters.
func (h *Host) LibP2P() host.Host { return h.h }

// Stats returns a snapshot of the host's counters.
func (h *Host) Stats() Stats {
	s := h.stats.snapshot()
	s.Peers = len(h.h.Network().Peers())
	s.InboundRefused, s.HandshakesFailed = h.inbound.refused.Load(), h.inbound.failed.Load()
	s.HandshakesTimedOut, s.Unauthenticated = h.inbound.timedOut.Load(), h.inbound.unauthenticated.Load()
	return s
}

// Close stops the host: it resets the outbound Send streams (frames still queued are
// dropped and counted; call Flush first to wait for them), leaves gossip, stops mDNS,
// closes every connection, and waits for the host's goroutines and running handlers
// (FrameHandler, HandleStream handlers) to return. Calls after the first return nil.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	senders := make([]*sender, 0, len(h.senders))
	for _, s := range h.senders {
		senders = append(senders, s)
	}
	h.mu.Unlock()

	for _, s := range senders {
		s.shutdown()
	}
	h.psCancel()
	var errs []error
	if h.mdns != nil {
		errs = append(errs, h.mdns.Close())
	}
	errs = append(errs, h.h.Close())
	h.conns.stop()
	h.wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close p2p host: %w", err)
	}
	return nil
}

// spawn runs each fn on its own goroutine that Close waits for, unless the host is
// closed, in which case it runs none and returns false.
func (h *Host) spawn(fns ...func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Add(len(fns))
	for _, fn := range fns {
		go func() {
			defer h.wg.Done()
			fn()
		}()
	}
	return true
}

// enter registers a running handler that Close waits for; it returns false if the host
// is closed. A true return must be paired with h.wg.Done.
func (h *Host) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Add(1)
	return true
}
