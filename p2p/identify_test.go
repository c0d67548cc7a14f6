package p2p

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// transportOf strips /p2p/<id> from a's first address: what DNS discovery finds.
func transportOf(t *testing.T, h *Host) multiaddr.Multiaddr {
	t.Helper()
	ma, _ := peer.SplitAddr(h.Addrs()[0])
	return ma
}

func TestIdentifyAddrLearnsPeerIDThenConnects(t *testing.T) {
	for _, withKey := range []bool{false, true} {
		t.Run(map[bool]string{false: "open mesh", true: "cluster key"}[withKey], func(t *testing.T) {
			psk := newPSK(t)
			configure := func(c *Config) {
				if withKey {
					c.ClusterKey = psk
				}
			}
			a, b := newHost(t, configure), newHost(t, configure)
			ctx := testContext(t)
			id, err := a.IdentifyAddr(ctx, transportOf(t, b))
			if err != nil {
				t.Fatal(err)
			}
			if id != b.ID() {
				t.Fatalf("IdentifyAddr = %s, want %s", id, b.ID())
			}
			if a.LibP2P().Network().Connectedness(b.ID()) == network.Connected {
				t.Fatal("IdentifyAddr left a libp2p connection open")
			}
			// The id found is good for a real connection, and b still accepts ours.
			got, err := a.Connect(ctx, transportOf(t, b).Encapsulate(multiaddr.StringCast("/p2p/"+id.String())))
			if err != nil || got != b.ID() {
				t.Fatalf("connect with the id found: %v, %v", got, err)
			}
			self, err := a.IdentifyAddr(ctx, transportOf(t, a))
			if err != nil || self != a.ID() {
				t.Fatalf("IdentifyAddr of its own address = %s, %v; want %s", self, err, a.ID())
			}
		})
	}
}

func TestIdentifyAddrWrongClusterKeyIsHandshakeError(t *testing.T) {
	a := newHost(t, func(c *Config) { c.ClusterKey = newPSK(t) })
	b := newHost(t, func(c *Config) { c.ClusterKey = newPSK(t) })
	_, err := a.IdentifyAddr(testContext(t), transportOf(t, b))
	if !errors.Is(err, ErrHandshake) {
		t.Fatalf("IdentifyAddr with another cluster key: %v, want ErrHandshake", err)
	}
}

func TestIdentifyAddrNobodyListening(t *testing.T) {
	a := newHost(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	addr := multiaddr.StringCast("/ip4/127.0.0.1/tcp/" + strconv.Itoa(port))
	if _, err := a.IdentifyAddr(testContext(t), addr); err == nil || errors.Is(err, ErrHandshake) {
		t.Fatalf("IdentifyAddr where nothing listens: %v, want a dial error (not a handshake error)", err)
	}
}

func TestIdentifyAddrSilentListenerEndsWithContext(t *testing.T) {
	a := newHost(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() { // accepts and never answers
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() {
		_, err := a.IdentifyAddr(ctx, multiaddr.StringCast("/ip4/127.0.0.1/tcp/"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)))
		done <- err
	}()
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(testTimeout):
		t.Fatal("IdentifyAddr did not dial")
	}
	cancel() // mid-handshake: the listener never answers
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("IdentifyAddr after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("IdentifyAddr did not return when its context ended")
	}
}
