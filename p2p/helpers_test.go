package p2p

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"

	"github.com/shardmesh/shardmesh/internal/testlog"
)

// testTimeout bounds every wait in a test; nothing should come close to it.
const testTimeout = 20 * time.Second

// testContext returns a context that ends with the test or after testTimeout.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs to the test's output until the test ends.
func testLogger(t testing.TB) *slog.Logger { return testlog.New(t, testLogLevel) }

func newKey(t testing.TB) crypto.PrivKey {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func newPSK(t testing.TB) pnet.PSK {
	t.Helper()
	psk, err := parseClusterKey(NewClusterKey())
	if err != nil {
		t.Fatal(err)
	}
	return psk
}

// newHost starts a host on a random loopback port, closed at the end of the test.
func newHost(t testing.TB, configure func(*Config)) *Host {
	t.Helper()
	cfg := Config{Identity: newKey(t), Logger: testLogger(t)}
	if configure != nil {
		configure(&cfg)
	}
	h, err := New(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("close host: %v", err)
		}
	})
	return h
}

// connect connects a to b and fails the test on error.
func connect(t testing.TB, a, b *Host) {
	t.Helper()
	if _, err := a.Connect(testContext(t), b.Addrs()[0]); err != nil {
		t.Fatalf("connect %s to %s: %v", a.ID(), b.ID(), err)
	}
}

// received collects frames delivered to a FrameHandler.
type received struct {
	ch chan receivedFrame
}

type receivedFrame struct {
	from  peer.ID
	frame []byte
}

func newReceived(size int) *received {
	return &received{ch: make(chan receivedFrame, size)}
}

// handler copies each frame into the channel (a frame is valid only during the call).
func (r *received) handler(from peer.ID, frame []byte) error {
	r.ch <- receivedFrame{from: from, frame: append([]byte(nil), frame...)}
	return nil
}

// next returns the next received frame or fails the test after testTimeout.
func (r *received) next(t testing.TB) receivedFrame {
	t.Helper()
	select {
	case f := <-r.ch:
		return f
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for a frame")
		return receivedFrame{}
	}
}

// waitFor polls cond (for state only visible through counters) until it holds or the
// test times out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// testLogLevel is the level of test logs; lower it to debug a test.
var testLogLevel = slog.LevelInfo

func isQueueFull(err error) bool { return errors.Is(err, ErrQueueFull) }
