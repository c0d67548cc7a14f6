package p2p

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/libp2p/go-libp2p/core/transport"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	basicconnmgr "github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/p2p/transport/tcpreuse"
	"github.com/libp2p/go-libp2p/x/rate"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Connection floods. Before its handshake completes a connection is unauthenticated: it
// may come from anyone, with or without the cluster key. go-libp2p's resource manager
// bounds such connections in total (its transient scope) and per IP address (connections
// at once), this host bounds new inbound connections per second from one address
// (allowNewConn), and it closes one that has not completed the handshake within
// HandshakeTimeout. Members and the operator keep headroom: their addresses are on the
// resource manager's allow-list, whose own budget they use when the common one is spent
// (members by address and peer id, KeepPeer; the operator's networks,
// Config.OperatorNetworks, by address), their new connections are not rate-limited, and
// the connection manager never trims a member's connections. Every inbound connection
// refused, and every handshake that fails or times out, is counted (Stats) and logged with
// its address, at most once a minute per address.

// Defaults of the connection limits (Config).
const (
	// DefaultHandshakeTimeout: an inbound connection that has not completed the handshake
	// (private network, security, muxer) within it is closed. libp2p's is 15 s.
	DefaultHandshakeTimeout = 3 * time.Second
	// DefaultMaxUnauthenticated: inbound connections in their handshake at once.
	DefaultMaxUnauthenticated = 256
	// DefaultConnsPerIP: connections at once from one IPv4 address (or IPv6 /56), outside
	// the operator's networks.
	DefaultConnsPerIP = 32
	// DefaultConnRatePerIP: new connections per second from one address (a burst of
	// DefaultConnsPerIP first), outside the operator's networks.
	DefaultConnRatePerIP = 1.0
	// connsLow, connsHigh: the connection manager trims connections to peers that are not
	// members down to connsLow once there are more than connsHigh.
	connsLow, connsHigh = 512, 1024
)

// DefaultOperatorNetworks are the networks shardctl connects from unless told otherwise:
// this host.
var DefaultOperatorNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}

// limitOptions are the libp2p options that bound connections: the resource manager, the
// connection manager and the TCP transport with the handshake timeout.
func (h *Host) limitOptions() ([]libp2p.Option, error) {
	cfg := &h.cfg
	scaling := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&scaling)
	unauth := rcmgr.LimitVal(cfg.MaxUnauthenticated)
	limits := rcmgr.PartialLimitConfig{
		System: rcmgr.ResourceLimits{ConnsInbound: 2048, ConnsOutbound: 2048, Conns: 4096},
		// Outbound dials pass through the transient scope too: they keep 128 of their own.
		Transient:            rcmgr.ResourceLimits{ConnsInbound: unauth, ConnsOutbound: 128, Conns: unauth + 128, FD: unauth + 128},
		AllowlistedSystem:    rcmgr.ResourceLimits{ConnsInbound: 512, ConnsOutbound: 512, Conns: 1024, FD: 1024},
		AllowlistedTransient: rcmgr.ResourceLimits{ConnsInbound: 128, ConnsOutbound: 128, Conns: 256, FD: 256},
	}.Build(scaling.AutoScale())

	var allow []multiaddr.Multiaddr
	var v4Prefix, v6Prefix []rcmgr.NetworkPrefixLimit
	var ratePrefix []rate.PrefixLimit
	for _, n := range cfg.OperatorNetworks {
		ma, err := prefixMultiaddr(n, "")
		if err != nil {
			return nil, err
		}
		allow = append(allow, ma)
		unlimited := rcmgr.NetworkPrefixLimit{Network: n, ConnCount: 1 << 30}
		if n.Addr().Is4() {
			v4Prefix = append(v4Prefix, unlimited)
		} else {
			v6Prefix = append(v6Prefix, unlimited)
		}
		ratePrefix = append(ratePrefix, rate.PrefixLimit{Prefix: n}) // zero: no limit
	}
	// New connections are rate-limited per address here (watchedResources), inbound only
	// and not from members: libp2p's own limiter counts outbound dials too, and a member
	// reconnecting after a partition or restarts (every protocol, every peer at once) ran
	// out of its burst, was refused by some peers and downed as indirectly connected.
	h.connRate = &rate.Limiter{
		NetworkPrefixLimits: ratePrefix,
		SubnetRateLimiter: rate.SubnetLimiter{
			IPv4SubnetLimits: []rate.SubnetLimit{{PrefixLength: 32, Limit: rate.Limit{RPS: cfg.ConnRatePerIP, Burst: cfg.ConnsPerIP}}},
			IPv6SubnetLimits: []rate.SubnetLimit{{PrefixLength: 56, Limit: rate.Limit{RPS: cfg.ConnRatePerIP, Burst: cfg.ConnsPerIP}}},
			GracePeriod:      time.Minute,
		},
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits),
		rcmgr.WithMetricsDisabled(),
		rcmgr.WithAllowlistedMultiaddrs(allow),
		rcmgr.WithNetworkPrefixLimit(v4Prefix, v6Prefix),
		rcmgr.WithLimitPerSubnet(
			[]rcmgr.ConnLimitPerSubnet{{PrefixLength: 32, ConnCount: cfg.ConnsPerIP}},
			[]rcmgr.ConnLimitPerSubnet{{PrefixLength: 56, ConnCount: cfg.ConnsPerIP}, {PrefixLength: 48, ConnCount: 8 * cfg.ConnsPerIP}}),
		rcmgr.WithConnRateLimiters(&rate.Limiter{}), // none: h.connRate is ours
	)
	if err != nil {
		return nil, fmt.Errorf("resource manager: %w", err)
	}
	allowlisted, ok := rm.(interface{ GetAllowlist() *rcmgr.Allowlist })
	if !ok {
		return nil, fmt.Errorf("resource manager: no allow-list")
	}
	cm, err := basicconnmgr.NewConnManager(connsLow, connsHigh, basicconnmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	h.allowlist, h.connmgr = allowlisted.GetAllowlist(), cm
	up := timedUpgrader{timeout: cfg.HandshakeTimeout}
	if cfg.ClusterKey != nil {
		up.dialKey, up.acceptKeys = cfg.ClusterKey, append([]pnet.PSK{cfg.ClusterKey}, cfg.AcceptKeys...)
	}
	return []libp2p.Option{
		libp2p.ResourceManager(&watchedResources{ResourceManager: rm, in: &h.inbound, h: h}),
		libp2p.ConnectionManager(cm),
		libp2p.Transport(func(u transport.Upgrader, rm network.ResourceManager, shared *tcpreuse.ConnMgr) (*tcp.TcpTransport, error) {
			up := up
			up.Upgrader = u
			return tcp.NewTCPTransport(up, rm, shared)
		}),
	}, nil
}

// prefixMultiaddr returns the allow-list entry of network n, restricted to peer id when set.
func prefixMultiaddr(n netip.Prefix, id peer.ID) (multiaddr.Multiaddr, error) {
	proto := "ip4"
	if n.Addr().Is6() {
		proto = "ip6"
	}
	s := fmt.Sprintf("/%s/%s/ipcidr/%d", proto, n.Addr(), n.Bits())
	if id != "" {
		s += "/p2p/" + id.String()
	}
	return multiaddr.NewMultiaddr(s)
}

// KeepPeer gives a member headroom: its addresses (with its peer id) go on the resource
// manager's allow-list, and the connection manager never trims its connections. Calling it
// again replaces the addresses.
func (h *Host) KeepPeer(info peer.AddrInfo) {
	h.ForgetPeer(info.ID)
	var entries []multiaddr.Multiaddr
	for _, a := range info.Addrs {
		ip, err := manet.ToIP(a)
		if err != nil {
			continue
		}
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			continue
		}
		addr = addr.Unmap()
		if ma, err := prefixMultiaddr(netip.PrefixFrom(addr, addr.BitLen()), info.ID); err == nil && h.allowlist.Add(ma) == nil {
			entries = append(entries, ma)
		}
	}
	h.keepMu.Lock()
	h.kept[info.ID] = entries
	for _, ma := range entries {
		h.keptIPs[entryIP(ma)]++
	}
	h.keepMu.Unlock()
	h.connmgr.Protect(info.ID, "member")
}

// ForgetPeer takes back what KeepPeer gave a peer.
func (h *Host) ForgetPeer(id peer.ID) {
	h.keepMu.Lock()
	entries, ok := h.kept[id]
	delete(h.kept, id)
	for _, ma := range entries {
		ip := entryIP(ma)
		if h.keptIPs[ip]--; h.keptIPs[ip] <= 0 {
			delete(h.keptIPs, ip)
		}
	}
	h.keepMu.Unlock()
	if !ok {
		return
	}
	for _, ma := range entries {
		_ = h.allowlist.Remove(ma)
	}
	h.connmgr.Unprotect(id, "member")
}

// entryIP returns the address of an allow-list entry made by prefixMultiaddr for one host.
func entryIP(ma multiaddr.Multiaddr) netip.Addr {
	ip, err := manet.ToIP(ma)
	if err != nil {
		return netip.Addr{}
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap()
}

// allowNewConn says whether a new inbound connection from endpoint is within the rate of
// new connections per address (Config.ConnRatePerIP, a burst of ConnsPerIP): always from
// the operators' networks and from the addresses of kept peers (members), whose
// reconnections after a partition or a restart come many at once.
func (h *Host) allowNewConn(endpoint multiaddr.Multiaddr) bool {
	ip, err := manet.ToIP(endpoint)
	if err != nil {
		return true // not an IP transport: nothing to count it by
	}
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return true
	}
	addr = addr.Unmap()
	h.keepMu.Lock()
	member := h.keptIPs[addr] > 0
	h.keepMu.Unlock()
	return member || h.connRate.Allow(addr)
}

// errConnRate is the refusal of a connection over the rate of its address.
var errConnRate = errors.New("rate limit exceeded: too many new connections from this address")

// inbound counts and logs what becomes of inbound connections before their handshake
// completes.
type inbound struct {
	h                         *Host
	unauthenticated           atomic.Int64
	refused, failed, timedOut atomic.Uint64
	logs                      logLimiter
}

func (in *inbound) refusedConn(endpoint multiaddr.Multiaddr, err error) {
	in.refused.Add(1)
	if in.logs.allow("refused", endpoint) {
		in.h.log.Warn("refused an inbound connection: too many from its address, or too many unauthenticated connections at once",
			"addr", endpoint.String(), "err", err)
	}
}

func (in *inbound) failedHandshake(endpoint multiaddr.Multiaddr, took time.Duration) {
	in.failed.Add(1)
	if in.logs.allow("failed", endpoint) {
		in.h.log.Warn("inbound handshake failed: the peer holds a different --cluster-key (or none), or is not a shardmesh peer",
			"addr", endpoint.String(), "after", took.Round(time.Millisecond).String())
	}
}

func (in *inbound) timedOutHandshake(endpoint multiaddr.Multiaddr) {
	in.timedOut.Add(1)
	if in.logs.allow("timed out", endpoint) {
		in.h.log.Warn("inbound handshake timed out: closed a connection that did not complete the handshake in time (a stalled or hostile peer, or one with another cluster key)",
			"addr", endpoint.String(), "timeout", in.h.cfg.HandshakeTimeout.String())
	}
}

// watchedResources is the resource manager, watching inbound connections until they are
// authenticated.
type watchedResources struct {
	network.ResourceManager
	in *inbound
	h  *Host
}

func (r *watchedResources) OpenConnection(dir network.Direction, usefd bool, endpoint multiaddr.Multiaddr) (network.ConnManagementScope, error) {
	if dir == network.DirInbound && !r.h.allowNewConn(endpoint) {
		r.in.refusedConn(endpoint, errConnRate)
		return nil, errConnRate
	}
	s, err := r.ResourceManager.OpenConnection(dir, usefd, endpoint)
	if dir != network.DirInbound {
		return s, err
	}
	if err != nil {
		r.in.refusedConn(endpoint, err)
		return nil, err
	}
	r.in.unauthenticated.Add(1)
	return &watchedScope{ConnManagementScope: s, in: r.in, endpoint: endpoint, opened: time.Now()}, nil
}

// States of a watched connection.
const (
	handshaking int32 = iota
	authenticated
	expired
	closed
)

// watchedScope is an inbound connection's scope: it learns when the connection is
// authenticated (SetPeer) or ends without having been.
type watchedScope struct {
	network.ConnManagementScope
	in       *inbound
	endpoint multiaddr.Multiaddr
	opened   time.Time
	state    atomic.Int32
}

func (s *watchedScope) SetPeer(p peer.ID) error {
	if s.state.CompareAndSwap(handshaking, authenticated) {
		s.in.unauthenticated.Add(-1)
	}
	return s.ConnManagementScope.SetPeer(p)
}

func (s *watchedScope) Done() {
	if s.state.Swap(closed) == handshaking {
		s.in.unauthenticated.Add(-1)
		s.in.failedHandshake(s.endpoint, time.Since(s.opened))
	}
	s.ConnManagementScope.Done()
}

// expire ends the handshake of a connection not yet authenticated; it reports whether it
// did (and the connection is to be closed).
func (s *watchedScope) expire() bool {
	if !s.state.CompareAndSwap(handshaking, expired) {
		return false
	}
	s.in.unauthenticated.Add(-1)
	s.in.timedOutHandshake(s.endpoint)
	return true
}

// timedUpgrader is the transport's upgrader, with listeners that close connections whose
// handshake does not complete within timeout; it puts connections in the private network
// (pnet.go): dialled ones under dialKey, accepted ones under any of acceptKeys.
type timedUpgrader struct {
	transport.Upgrader
	timeout    time.Duration
	dialKey    pnet.PSK   // nil: no private network
	acceptKeys []pnet.PSK // dialKey first
}

func (u timedUpgrader) UpgradeGatedMaListener(t transport.Transport, l transport.GatedMaListener) transport.Listener {
	return u.Upgrader.UpgradeGatedMaListener(t, timedListener{GatedMaListener: l, u: u})
}

func (u timedUpgrader) Upgrade(ctx context.Context, t transport.Transport, c manet.Conn, dir network.Direction, p peer.ID, scope network.ConnManagementScope) (transport.CapableConn, error) {
	if u.dialKey != nil && dir == network.DirOutbound {
		c = dialProtected(c, u.dialKey)
	}
	return u.Upgrader.Upgrade(ctx, t, c, dir, p, scope)
}

type timedListener struct {
	transport.GatedMaListener
	u timedUpgrader
}

func (l timedListener) Accept() (manet.Conn, network.ConnManagementScope, error) {
	conn, scope, err := l.GatedMaListener.Accept()
	if err != nil {
		return conn, scope, err
	}
	if ws, ok := scope.(*watchedScope); ok {
		raw := conn
		time.AfterFunc(l.u.timeout, func() {
			if ws.expire() {
				_ = raw.Close()
			}
		})
	}
	if l.u.acceptKeys != nil {
		conn = acceptProtected(conn, l.u.acceptKeys)
	}
	return conn, scope, nil
}

// logLimiter lets a log line of one kind about an address through at most once a minute
// per IP, and at most logBurst lines a minute in all.
type logLimiter struct {
	mu      sync.Mutex
	last    map[string]time.Time
	window  time.Time
	inBurst int
}

const logBurst = 20

func (l *logLimiter) allow(kind string, endpoint multiaddr.Multiaddr) bool {
	key := kind + " " + endpoint.String()
	if ip, err := manet.ToIP(endpoint); err == nil {
		key = kind + " " + ip.String()
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Minute {
		l.window, l.inBurst = now, 0
		if len(l.last) > 4096 {
			l.last = nil
		}
	}
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	if at, ok := l.last[key]; ok && now.Sub(at) < time.Minute || l.inBurst >= logBurst {
		return false
	}
	l.last[key] = now
	l.inBurst++
	return true
}
