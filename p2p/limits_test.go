package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// tcpOf returns the TCP address of h's first listen address.
func tcpOf(t testing.TB, h *Host) string {
	t.Helper()
	transport, _ := multiaddr.SplitFunc(h.Addrs()[0], func(c multiaddr.Component) bool { return c.Protocol().Code == multiaddr.P_P2P })
	na, err := manet.ToNetAddr(transport)
	if err != nil {
		t.Fatal(err)
	}
	return na.String()
}

// TestStalledHandshakesAreBoundedAndCutOff: connections that never complete the handshake
// are closed after HandshakeTimeout, at most MaxUnauthenticated are held at once (the rest
// are refused at once), all of it counted and logged with the address; a peer with the key
// still connects meanwhile from an operator's network.
func TestStalledHandshakesAreBoundedAndCutOff(t *testing.T) {
	key := newPSK(t)
	var logs logBuffer
	target := newHost(t, func(c *Config) {
		c.ClusterKey = key
		c.HandshakeTimeout = 300 * time.Millisecond
		c.MaxUnauthenticated = 8
		c.Logger = logs.logger()
	})
	addr := tcpOf(t, target)
	// 20 stalled connections from 127.0.0.2 (not an operator network).
	var conns []net.Conn
	for range 20 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Each is closed by the host (after whatever it sent of its handshake): at once
	// (refused) or after the timeout.
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var err error
		for err == nil {
			_, err = c.Read(make([]byte, 64))
		}
		if isTimeout(err) {
			t.Fatalf("connection %d was not closed by the host: %v", i, err)
		}
		c.Close()
	}
	st := target.Stats()
	if st.InboundRefused == 0 || st.HandshakesTimedOut == 0 || st.InboundRefused+st.HandshakesTimedOut+st.HandshakesFailed < 20 {
		t.Errorf("stats: %+v", st)
	}
	if st.HandshakesTimedOut > 8 {
		t.Errorf("%d handshakes held at once, the bound is 8", st.HandshakesTimedOut)
	}
	if st.Unauthenticated != 0 {
		t.Errorf("%d connections still counted unauthenticated", st.Unauthenticated)
	}
	out := logs.String()
	if !strings.Contains(out, "127.0.0.2") || !strings.Contains(out, "refused an inbound connection") || !strings.Contains(out, "timed out") {
		t.Errorf("not logged with the address (%+v):\n%s", st, out)
	}
	if n := strings.Count(out, "\n"); n > 4 {
		t.Errorf("%d log lines for one address: not rate-limited\n%s", n, out)
	}
	// A member connects.
	peer := newHost(t, func(c *Config) { c.ClusterKey = key })
	connect(t, peer, target)
}

// TestDialErrorsSayWhatHappened: another cluster key, a /p2p/ id that is not the peer's,
// and a peer that accepts TCP and never answers are three different errors.
func TestDialErrorsSayWhatHappened(t *testing.T) {
	key := newPSK(t)
	target := newHost(t, func(c *Config) { c.ClusterKey = key })
	other := newHost(t, func(c *Config) { c.ClusterKey = key })
	ctx := testContext(t)

	stranger := newHost(t, func(c *Config) { c.ClusterKey = newPSK(t) })
	_, err := stranger.Connect(ctx, target.Addrs()[0])
	if !errors.Is(err, ErrHandshake) || errors.Is(err, ErrHandshakeTimeout) {
		t.Errorf("another key: %v", err)
	}

	wrong, _ := multiaddr.NewMultiaddr(strings.Replace(target.Addrs()[0].String(), target.ID().String(), other.ID().String(), 1))
	client := newHost(t, func(c *Config) { c.ClusterKey = key })
	_, err = client.Connect(ctx, wrong)
	if !errors.Is(err, ErrPeerIDMismatch) || !strings.HasPrefix(err.Error(), "peer id mismatch") || !strings.Contains(err.Error(), target.ID().String()) {
		t.Errorf("another peer's id: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	silent, _ := multiaddr.NewMultiaddr(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", l.Addr().(*net.TCPAddr).Port, target.ID()))
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = client.Connect(short, silent)
	if !errors.Is(err, ErrHandshakeTimeout) || errors.Is(err, ErrHandshake) || strings.Contains(err.Error(), "cluster-key") {
		t.Errorf("a silent peer: %v", err)
	}
}

// logBuffer collects a host's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// TestMembersReconnectPastTheRateLimit: new inbound connections from an address beyond its
// burst are refused — but not a member's (KeepPeer), which reconnects after partitions and
// restarts many at once, and not this host's own dials. Loopback is not an operator
// network here, so every host of the test shares one rate-limited address.
func TestMembersReconnectPastTheRateLimit(t *testing.T) {
	limited := func(c *Config) {
		c.OperatorNetworks = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
		c.ConnsPerIP, c.ConnRatePerIP = 8, 0.001 // a burst of 8, then one every 1,000 s
	}
	target := newHost(t, limited)
	addr := tcpOf(t, target)
	// A stranger spends the address's burst.
	refusedBefore := target.Stats().InboundRefused
	for range 12 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	waitFor(t, "connections over the burst refused", func() bool { return target.Stats().InboundRefused > refusedBefore })
	member, other := newHost(t, nil), newHost(t, nil)
	if _, err := member.Connect(testContext(t), target.Addrs()[0]); err == nil {
		t.Fatal("a peer connected from an address past its rate before it was kept")
	}
	// The host's own dials are not counted against the address.
	for i := range 3 {
		connect(t, target, other)
		closeSettled(t, fmt.Sprint("dial ", i), target, other)
	}
	// A member reconnects as often as it needs.
	target.KeepPeer(peer.AddrInfo{ID: member.ID(), Addrs: member.Addrs()})
	for i := range 5 {
		connect(t, member, target)
		closeSettled(t, fmt.Sprint("connection ", i), member, target)
	}
	// Once it is no longer a member, its address is limited again (a raw connection: a
	// libp2p dial could ride on a connection the target opened meanwhile).
	target.ForgetPeer(member.ID())
	refusedBefore = target.Stats().InboundRefused
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "a connection from a forgotten member's address refused", func() bool { return target.Stats().InboundRefused > refusedBefore })
}

// closeSettled closes a's connections to b once both hosts' gossipsub have opened their
// streams on them, and waits until neither holds one. Closed earlier, a gossipsub that had
// not yet opened its stream dials the peer back to open it — from its listening port to
// the peer's, the same address pair as the test's next dial, which then fails.
func closeSettled(t *testing.T, what string, a, b *Host) {
	t.Helper()
	gossips := func(from, to *Host) bool {
		for _, c := range from.LibP2P().Network().ConnsToPeer(to.ID()) {
			for _, st := range c.GetStreams() {
				if st.Stat().Direction == network.DirOutbound && strings.HasPrefix(string(st.Protocol()), "/meshsub/") {
					return true
				}
			}
		}
		return false
	}
	waitFor(t, what+": gossip streams open", func() bool { return gossips(a, b) && gossips(b, a) })
	if err := a.LibP2P().Network().ClosePeer(b.ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, what+" closed", func() bool {
		return len(a.LibP2P().Network().ConnsToPeer(b.ID())) == 0 && len(b.LibP2P().Network().ConnsToPeer(a.ID())) == 0
	})
}
