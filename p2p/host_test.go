package p2p

import (
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/multiformats/go-multiaddr"
)

const testProto = protocol.ID("/shardmesh/test/1")

func TestAddrsAreDialable(t *testing.T) {
	h := newHost(t, func(c *Config) {
		c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/tcp/0"}
	})
	addrs := h.Addrs()
	if len(addrs) != 2 {
		t.Fatalf("Addrs() = %v, want one per listen address", addrs)
	}
	for _, a := range addrs {
		info, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil || info.ID != h.ID() {
			t.Fatalf("%s: not ending in our /p2p/ id: %v", a, err)
		}
		port, err := a.ValueForProtocol(multiaddr.P_TCP)
		if err != nil || port == "0" {
			t.Fatalf("%s: port not resolved", a)
		}
	}
	for _, a := range addrs {
		other := newHost(t, nil)
		if id, err := other.Connect(testContext(t), a); err != nil || id != h.ID() {
			t.Fatalf("connect to %s: %v", a, err)
		}
	}
}

// TestSameClusterKey: two hosts with the same key connect and exchange frames both ways.
func TestSameClusterKey(t *testing.T) {
	key := newPSK(t)
	a := newHost(t, func(c *Config) { c.ClusterKey = key })
	b := newHost(t, func(c *Config) { c.ClusterKey = key })
	gotA, gotB := newReceived(1), newReceived(1)
	a.Handle(testProto, gotA.handler)
	b.Handle(testProto, gotB.handler)
	connect(t, a, b)

	ctx := testContext(t)
	if err := a.Send(ctx, b.ID(), testProto, []byte("a to b")); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(ctx, a.ID(), testProto, []byte("b to a")); err != nil {
		t.Fatal(err)
	}
	if f := gotB.next(t); f.from != a.ID() || string(f.frame) != "a to b" {
		t.Fatalf("b got %q from %s", f.frame, f.from)
	}
	if f := gotA.next(t); f.from != b.ID() || string(f.frame) != "b to a" {
		t.Fatalf("a got %q from %s", f.frame, f.from)
	}
}

// TestClusterKeyMismatch: a peer with another key, or without one, cannot connect, and
// the error says why.
func TestClusterKeyMismatch(t *testing.T) {
	t.Parallel() // one case waits out a 5 s dial timeout
	tests := []struct {
		name         string
		dialer, peer func() []byte
	}{
		{"different keys", func() []byte { return newPSK(t) }, func() []byte { return newPSK(t) }},
		{"only the dialer has a key", func() []byte { return newPSK(t) }, func() []byte { return nil }},
		// The listener waits for a key nonce the dialer never sends: this one ends on
		// libp2p's 5 s local dial timeout.
		{"only the listener has a key", func() []byte { return nil }, func() []byte { return newPSK(t) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dialerKey, peerKey := tt.dialer(), tt.peer()
			a := newHost(t, func(c *Config) { c.ClusterKey = dialerKey })
			b := newHost(t, func(c *Config) { c.ClusterKey = peerKey })
			b.Handle(testProto, func(peer.ID, []byte) error {
				t.Error("a frame got through")
				return nil
			})
			_, err := a.Connect(testContext(t), b.Addrs()[0])
			if !errors.Is(err, ErrHandshake) {
				t.Fatalf("got %v, want ErrHandshake", err)
			}
			if !strings.Contains(err.Error(), "--cluster-key") || !strings.Contains(err.Error(), "allow-list") {
				t.Fatalf("error %q does not name the likely causes", err)
			}
			err = a.Send(testContext(t), b.ID(), testProto, []byte("let me in"))
			if !errors.Is(err, ErrHandshake) {
				t.Fatalf("Send: got %v, want ErrHandshake", err)
			}
			if n := len(a.LibP2P().Network().Peers()) + len(b.LibP2P().Network().Peers()); n != 0 {
				t.Fatalf("%d connections left", n)
			}
		})
	}
}

func TestAllowList(t *testing.T) {
	key := newPSK(t)
	member := newHost(t, func(c *Config) { c.ClusterKey = key })
	stranger := newHost(t, func(c *Config) { c.ClusterKey = key })
	strict := newHost(t, func(c *Config) {
		c.ClusterKey = key
		c.AllowPeers = []peer.ID{member.ID()}
	})
	got := newReceived(1)
	strict.Handle(testProto, got.handler)

	t.Run("member connects", func(t *testing.T) {
		connect(t, member, strict)
		if err := member.Send(testContext(t), strict.ID(), testProto, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if f := got.next(t); string(f.frame) != "hi" {
			t.Fatalf("got %q", f.frame)
		}
	})
	t.Run("stranger is refused inbound", func(t *testing.T) {
		_, err := stranger.Connect(testContext(t), strict.Addrs()[0])
		if !errors.Is(err, ErrHandshake) {
			t.Fatalf("got %v, want ErrHandshake", err)
		}
		if err := stranger.Send(testContext(t), strict.ID(), testProto, []byte("x")); !errors.Is(err, ErrHandshake) {
			t.Fatalf("Send: got %v, want ErrHandshake", err)
		}
	})
	t.Run("strict host refuses to dial a stranger", func(t *testing.T) {
		_, err := strict.Connect(testContext(t), stranger.Addrs()[0])
		if !errors.Is(err, ErrNotAllowed) {
			t.Fatalf("got %v, want ErrNotAllowed", err)
		}
		if _, err := strict.OpenStream(testContext(t), stranger.ID(), testProto); !errors.Is(err, ErrNotAllowed) {
			t.Fatalf("OpenStream: got %v, want ErrNotAllowed", err)
		}
	})
	if strict.LibP2P().Network().Connectedness(stranger.ID()) == network.Connected {
		t.Fatal("stranger connected")
	}
}

func TestConnectErrors(t *testing.T) {
	a := newHost(t, nil)
	b := newHost(t, nil)
	bare, _ := multiaddr.SplitLast(b.Addrs()[0])
	if _, err := a.Connect(testContext(t), bare); !errors.Is(err, ErrNoPeerID) {
		t.Fatalf("address without /p2p/: got %v, want ErrNoPeerID", err)
	}
	if _, err := a.Connect(testContext(t), a.Addrs()[0]); err == nil {
		t.Fatal("connecting to ourselves succeeded")
	}
	addr := b.Addrs()[0]
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := a.Connect(testContext(t), addr)
	if err == nil || errors.Is(err, ErrHandshake) {
		t.Fatalf("nobody listening: got %v, want a plain dial error", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Connect(testContext(t), addr); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: got %v, want ErrClosed", err)
	}
	if err := a.Send(testContext(t), b.ID(), testProto, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: got %v, want ErrClosed", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestNotify(t *testing.T) {
	a := newHost(t, nil)
	b := newHost(t, nil)
	type event struct {
		id peer.ID
		up bool
	}
	events := make(chan event, 10)
	a.Notify(func(id peer.ID, up bool) { events <- event{id, up} })
	connect(t, a, b)
	connect(t, b, a) // already connected: no new event
	if ev := <-events; ev.id != b.ID() || !ev.up {
		t.Fatalf("got %+v, want b up", ev)
	}
	if got := a.Stats().Peers; got != 1 {
		t.Fatalf("Stats().Peers = %d, want 1", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.id != b.ID() || ev.up {
		t.Fatalf("got %+v, want b down", ev)
	}
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

// TestDialBackoffIsRetried: an address that libp2p put in its dial backoff (a dial that
// failed a moment ago: two members dialling each other at once, a peer restarting) does not
// fail the next dial: the host dials again at once.
func TestDialBackoffIsRetried(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, nil)
	info, err := peer.AddrInfoFromP2pAddr(b.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	a.LibP2P().Peerstore().AddAddrs(info.ID, info.Addrs, peerstore.PermanentAddrTTL)
	sw, ok := a.LibP2P().Network().(*swarm.Swarm)
	if !ok {
		t.Fatalf("network is a %T", a.LibP2P().Network())
	}
	for _, addr := range info.Addrs {
		sw.Backoff().AddBackoff(info.ID, addr)
	}
	if err := a.dial(testContext(t), "test", info.ID); err != nil {
		t.Fatalf("dial of an address in backoff: %v", err)
	}
}
