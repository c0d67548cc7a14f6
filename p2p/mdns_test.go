package p2p

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

// recordingHandler keeps log records for assertions.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordingHandler) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return nil
}
func (r *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recordingHandler) WithGroup(string) slog.Handler      { return r }

func (r *recordingHandler) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.records {
		if strings.Contains(rec.Message, substr) {
			n++
		}
	}
	return n
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestMDNSUnavailable: when mDNS cannot start, the host logs why once and works without it.
func TestMDNSUnavailable(t *testing.T) {
	logs := &recordingHandler{}
	h := newHost(t, func(c *Config) {
		c.MDNS = true
		c.Logger = slog.New(logs)
		c.startMDNS = func(host.Host, string, func(peer.AddrInfo)) (io.Closer, error) {
			return nil, errors.New("no supported interface")
		}
	})
	if h.Discovered() != nil {
		t.Fatal("Discovered() is not nil without mDNS")
	}
	if n := logs.count("mDNS discovery off"); n != 1 {
		t.Fatalf("logged %d times why mDNS is off, want once", n)
	}
	other := newHost(t, nil)
	connect(t, other, h) // the host works
}

func TestMDNSOffLogsOnce(t *testing.T) {
	logs := &recordingHandler{}
	h := newHost(t, func(c *Config) { c.Logger = slog.New(logs) })
	if h.Discovered() != nil {
		t.Fatal("Discovered() is not nil with MDNS off")
	}
	if n := logs.count("mDNS discovery off"); n != 1 {
		t.Fatalf("logged %d times why mDNS is off, want once", n)
	}
}

// TestMDNSFindsArriveOnDiscovered, with a stand-in for the mDNS service: finds reach
// Discovered, our own id is filtered out, and Close closes the service.
func TestMDNSFindsArriveOnDiscovered(t *testing.T) {
	var found func(peer.AddrInfo)
	var gotTag string
	closed := make(chan struct{})
	h := newHost(t, func(c *Config) {
		c.MDNS = true
		c.MDNSTag = "shardmesh-test"
		c.startMDNS = func(_ host.Host, tag string, f func(peer.AddrInfo)) (io.Closer, error) {
			gotTag, found = tag, f
			return closerFunc(func() error { close(closed); return nil }), nil
		}
	})
	if gotTag != "shardmesh-test" {
		t.Fatalf("service started with tag %q", gotTag)
	}
	other := newHost(t, nil)
	found(peer.AddrInfo{ID: h.ID(), Addrs: h.LibP2P().Addrs()}) // ourselves: dropped
	found(peer.AddrInfo{ID: other.ID(), Addrs: other.LibP2P().Addrs()})
	info := <-h.Discovered()
	if info.ID != other.ID() {
		t.Fatalf("discovered %s, want %s", info.ID, other.ID())
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	<-closed
}

// TestMDNSReal runs real mDNS between two hosts. It multicasts on every interface, so
// it runs only when asked, best inside a network namespace whose loopback carries
// multicast:
//
//	go test -c -o /tmp/p2p.test ./p2p && cd p2p && unshare -rn sh -c \
//	  'ip link set lo up multicast on && ip route add 224.0.0.0/4 dev lo &&
//	   SHARDMESH_TEST_MDNS=1 /tmp/p2p.test -test.run MDNSReal -test.v'
//
// It skips when mDNS cannot start (no multicast interface).
func TestMDNSReal(t *testing.T) {
	if os.Getenv("SHARDMESH_TEST_MDNS") != "1" {
		t.Skip("set SHARDMESH_TEST_MDNS=1 to run real mDNS (multicasts on every interface)")
	}
	tag := "shardmesh-test-" + strings.ToLower(newHost(t, nil).ID().String()[8:16])
	a := newHost(t, func(c *Config) { c.MDNS, c.MDNSTag = true, tag })
	b := newHost(t, func(c *Config) { c.MDNS, c.MDNSTag = true, tag })
	if a.Discovered() == nil || b.Discovered() == nil {
		t.Skip("mDNS could not start here (no multicast interface)")
	}
	ctx := testContext(t)
	for {
		select {
		case info := <-a.Discovered():
			if info.ID == b.ID() {
				return
			}
		case <-ctx.Done():
			t.Fatal("a did not discover b")
		}
	}
}
