package p2p

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Defaults for Config; DefaultConfig returns them.
const (
	// DefaultListenAddr: loopback, a port chosen by the kernel. Safe for tests and single
	// machines; a daemon on a network passes its own address.
	DefaultListenAddr = "/ip4/127.0.0.1/tcp/0"
	// DefaultMDNSTag is the mDNS service name when Config.MDNSTag is empty.
	DefaultMDNSTag = "shardmesh"
	// DefaultSendQueue: frames per outbound stream. Large enough to absorb a burst at full
	// speed (~10 ms of traffic) without ErrQueueFull.
	DefaultSendQueue = 65536
	// DefaultSendQueueBytes: bytes per outbound stream, 64 MiB; bounds memory when frames
	// are large, since SendQueue alone would allow SendQueue × MaxFrameSize.
	DefaultSendQueueBytes = 64 << 20
	// DefaultWriteTimeout: a peer that reads nothing for this long has its stream reset.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultGossipQueue: gossipsub per-peer outbound queue, validation queue and
	// subscription buffer, in messages. gossipsub's defaults (32) drop bursts.
	DefaultGossipQueue = 2048
)

// maxMaxFrameSize is the largest MaxFrameSize Validate accepts: 1 GiB.
const maxMaxFrameSize = 1 << 30

// Config configures a Host. Start from DefaultConfig or the zero value; Validate (called
// by New) fills zero fields with their defaults.
type Config struct {
	// Identity is the host's private key, which fixes its peer id. Required; see
	// LoadOrCreateIdentity.
	Identity crypto.PrivKey

	// ListenAddrs are TCP multiaddrs to listen on. Default: [DefaultListenAddr].
	ListenAddrs []string

	// ClusterKey is the libp2p private-network key (see LoadClusterKey). nil: an open
	// mesh, any libp2p peer may connect. Non-nil: only peers holding the same key can
	// connect at all.
	ClusterKey pnet.PSK

	// AcceptKeys are further cluster keys accepted from connecting peers, beside
	// ClusterKey (which alone is used to dial): to rotate the key without downtime
	// (docs/security.md). Needs ClusterKey.
	AcceptKeys []pnet.PSK

	// AllowPeers, when not empty, is the only set of peers this host connects to or
	// accepts connections from (enforced by a connection gater on dial and after the
	// security handshake). Empty: any peer (holding the ClusterKey, if one is set).
	AllowPeers []peer.ID

	// MDNS turns on mDNS discovery on the local network; finds arrive on
	// Host.Discovered. If mDNS cannot start (no multicast interface) the host logs why
	// once and runs without it. Default: off.
	MDNS bool

	// MDNSTag is the mDNS service name; peers find only peers with the same tag, so use
	// one per cluster (e.g. "shardmesh-<cluster>"). Default: DefaultMDNSTag.
	MDNSTag string

	// MaxFrameSize is the largest frame, in bytes, that Send and WriteFrame accept and
	// that a peer may send us. Default: DefaultMaxFrameSize (4 MiB); at most 1 GiB.
	MaxFrameSize int

	// SendQueue is how many frames may wait per outbound stream (peer, protocol) before
	// Send returns ErrQueueFull. Default: DefaultSendQueue.
	SendQueue int

	// SendQueueBytes is how many bytes (frames with their length prefixes) may wait per
	// outbound stream before Send returns ErrQueueFull. At least MaxFrameSize+10.
	// Default: DefaultSendQueueBytes (64 MiB).
	SendQueueBytes int

	// WriteTimeout bounds one batched write on an outbound stream; a peer that does not
	// read for this long has the stream reset and its queued frames dropped (counted in
	// Stats.FramesDropped, reported by Flush). Default: DefaultWriteTimeout (30 s).
	WriteTimeout time.Duration

	// GossipQueue is the gossipsub per-peer outbound queue, validation queue and
	// subscription buffer size, in messages. Default: DefaultGossipQueue (2048).
	GossipQueue int

	// DialTimeout bounds one dial of a peer, the security handshake included, on loopback
	// and private addresses as on public ones. Default: libp2p's (5 s local, 15 s
	// public). A tool that has a deadline of its own (shardctl --timeout) sets it so that a
	// hung peer fails after that deadline, not libp2p's.
	DialTimeout time.Duration

	// Logger receives the host's logs. Default: discard.
	Logger *slog.Logger

	// OpenMesh allows listening on an address other than loopback without a ClusterKey:
	// an open mesh, which anyone who reaches the port can join. Without it New refuses
	// (ErrOpenMesh). Default: off.
	OpenMesh bool

	// HandshakeTimeout closes an inbound connection that has not completed its handshake
	// (private network, security, muxer) within it. Default: DefaultHandshakeTimeout (3 s).
	HandshakeTimeout time.Duration

	// MaxUnauthenticated bounds the inbound connections in their handshake at once.
	// Default: DefaultMaxUnauthenticated (256).
	MaxUnauthenticated int

	// ConnsPerIP bounds the connections at once from one IPv4 address (or IPv6 /56), and is
	// the burst of new connections from one; ConnRatePerIP is how many new connections
	// per second one may open after the burst (inbound; members, KeepPeer, are not
	// rate-limited). The OperatorNetworks are exempt. Defaults: DefaultConnsPerIP (32),
	// DefaultConnRatePerIP (1).
	ConnsPerIP    int
	ConnRatePerIP float64

	// OperatorNetworks are where shardctl and the dashboard connect from: exempt from the
	// per-address limits, and with a budget of their own when the common one is spent (a
	// connection flood). Default: DefaultOperatorNetworks (this host, over loopback).
	OperatorNetworks []netip.Prefix

	// startMDNS replaces the mDNS service in tests; nil: the real one.
	startMDNS func(h host.Host, tag string, found func(peer.AddrInfo)) (io.Closer, error)
}

// DefaultConfig returns a Config with every default filled in except Identity.
func DefaultConfig() Config {
	var c Config
	c.fillDefaults()
	return c
}

func (c *Config) fillDefaults() {
	if len(c.ListenAddrs) == 0 {
		c.ListenAddrs = []string{DefaultListenAddr}
	}
	if c.MDNSTag == "" {
		c.MDNSTag = DefaultMDNSTag
	}
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.SendQueue == 0 {
		c.SendQueue = DefaultSendQueue
	}
	if c.SendQueueBytes == 0 {
		c.SendQueueBytes = max(DefaultSendQueueBytes, c.MaxFrameSize+binary.MaxVarintLen64)
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.GossipQueue == 0 {
		c.GossipQueue = DefaultGossipQueue
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.MaxUnauthenticated == 0 {
		c.MaxUnauthenticated = DefaultMaxUnauthenticated
	}
	if c.ConnsPerIP == 0 {
		c.ConnsPerIP = DefaultConnsPerIP
	}
	if c.ConnRatePerIP == 0 {
		c.ConnRatePerIP = DefaultConnRatePerIP
	}
	if c.OperatorNetworks == nil {
		c.OperatorNetworks = DefaultOperatorNetworks
	}
}

// Validate fills zero fields with their defaults and rejects nonsense with an error that
// names the field.
func (c *Config) Validate() error {
	c.fillDefaults()
	var errs []error
	if c.Identity == nil {
		errs = append(errs, fieldError("Identity", "required (see p2p.LoadOrCreateIdentity)"))
	} else if c.Identity.Type() != crypto.Ed25519 {
		errs = append(errs, fieldError("Identity", "a %s key; shardmesh identities are Ed25519", c.Identity.Type()))
	}
	for i, s := range c.ListenAddrs {
		if err := checkListenAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("ListenAddrs[%d] %q: %w", i, s, err))
		} else if c.ClusterKey == nil && !c.OpenMesh && !isLoopback(s) {
			errs = append(errs, fmt.Errorf("%w: listening on %s without a cluster key lets anyone who reaches it join and read entity state; "+
				"give the members a key (shardctl keygen --out cluster.key, then --cluster-key cluster.key), listen on loopback only, "+
				"or pass --open-mesh=on if an open mesh is what you want", ErrOpenMesh, s))
		}
	}
	if c.ClusterKey != nil && len(c.ClusterKey) != clusterKeySize {
		errs = append(errs, fmt.Errorf("ClusterKey: %d bytes, want %d (see p2p.LoadClusterKey)", len(c.ClusterKey), clusterKeySize))
	}
	for i, k := range c.AcceptKeys {
		if len(k) != clusterKeySize {
			errs = append(errs, fmt.Errorf("AcceptKeys[%d]: %d bytes, want %d (see p2p.LoadClusterKey)", i, len(k), clusterKeySize))
		}
	}
	if len(c.AcceptKeys) > 0 && c.ClusterKey == nil {
		errs = append(errs, errors.New("AcceptKeys: needs a ClusterKey, to dial with"))
	}
	for i, id := range c.AllowPeers {
		if err := id.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("AllowPeers[%d]: %w", i, err))
		}
	}
	if c.MaxFrameSize < 0 || c.MaxFrameSize > maxMaxFrameSize {
		errs = append(errs, fmt.Errorf("MaxFrameSize: %d bytes, want 1..%d", c.MaxFrameSize, maxMaxFrameSize))
	}
	if c.SendQueue < 0 {
		errs = append(errs, fmt.Errorf("SendQueue: %d frames, want > 0", c.SendQueue))
	}
	if c.SendQueueBytes < c.MaxFrameSize+binary.MaxVarintLen64 {
		errs = append(errs, fmt.Errorf("SendQueueBytes: %d, want at least MaxFrameSize+%d = %d so that one largest frame fits",
			c.SendQueueBytes, binary.MaxVarintLen64, c.MaxFrameSize+binary.MaxVarintLen64))
	}
	if c.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("WriteTimeout: %v, want > 0", c.WriteTimeout))
	}
	if c.DialTimeout < 0 {
		errs = append(errs, fmt.Errorf("DialTimeout: %v, want > 0", c.DialTimeout))
	}
	if c.GossipQueue < 0 {
		errs = append(errs, fmt.Errorf("GossipQueue: %d, want > 0", c.GossipQueue))
	}
	if c.HandshakeTimeout < 0 {
		errs = append(errs, fmt.Errorf("HandshakeTimeout: %v, want > 0", c.HandshakeTimeout))
	}
	if c.MaxUnauthenticated < 0 || c.ConnsPerIP < 0 || c.ConnRatePerIP < 0 {
		errs = append(errs, fmt.Errorf("MaxUnauthenticated %d, ConnsPerIP %d, ConnRatePerIP %v: want > 0", c.MaxUnauthenticated, c.ConnsPerIP, c.ConnRatePerIP))
	}
	if len(errs) > 0 {
		return fmt.Errorf("p2p config: %w", errors.Join(errs...))
	}
	return nil
}

// fieldError is an error about the Config field name.
func fieldError(name, format string, args ...any) error {
	return fmt.Errorf("%s: %w", name, fmt.Errorf(format, args...))
}

// isLoopback reports whether listen address s (valid) is a loopback address only; an
// unspecified one (0.0.0.0, ::) listens on every interface.
func isLoopback(s string) bool {
	ma, err := multiaddr.NewMultiaddr(s)
	return err == nil && manet.IsIPLoopback(ma)
}

// checkListenAddr accepts /ip4|/ip6|/dns*/<host>/tcp/<port>, the only transport we run.
func checkListenAddr(s string) error {
	ma, err := multiaddr.NewMultiaddr(s)
	if err != nil {
		return err
	}
	if len(ma) != 2 {
		return errors.New("want /ip4/<ip>/tcp/<port> or /ip6/<ip>/tcp/<port> (TCP is the only transport)")
	}
	switch ma[0].Protocol().Code {
	case multiaddr.P_IP4, multiaddr.P_IP6:
	default:
		return errors.New("want an /ip4 or /ip6 address")
	}
	if ma[1].Protocol().Code != multiaddr.P_TCP {
		return errors.New("want /tcp/<port> (TCP is the only transport)")
	}
	return nil
}
