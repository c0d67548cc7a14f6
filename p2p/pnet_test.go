package p2p

import (
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/pnet"
)

// TestAcceptKeys: a host dials with its cluster key and accepts its other keys too (the
// middle of a key rotation); a peer under none of them fails its handshake at once, and the
// host counts it as failed, not timed out.
func TestAcceptKeys(t *testing.T) {
	oldKey, newKey, otherKey := newPSK(t), newPSK(t), newPSK(t)
	rotating := newHost(t, func(c *Config) { c.ClusterKey, c.AcceptKeys = oldKey, []pnet.PSK{newKey} })
	moved := newHost(t, func(c *Config) { c.ClusterKey = newKey })
	stayed := newHost(t, func(c *Config) { c.ClusterKey = oldKey })
	connect(t, moved, rotating)  // dials with the new key: accepted
	connect(t, stayed, rotating) // the old key: accepted
	ctx := testContext(t)
	onlyNew := newHost(t, func(c *Config) { c.ClusterKey = newKey })
	if _, err := rotating.Connect(ctx, onlyNew.Addrs()[0]); !errors.Is(err, ErrHandshake) {
		t.Errorf("the rotating host dials with its first key, which a host with only the new key does not accept: %v", err)
	}
	stranger := newHost(t, func(c *Config) { c.ClusterKey = otherKey })
	if _, err := stranger.Connect(ctx, rotating.Addrs()[0]); !errors.Is(err, ErrHandshake) {
		t.Fatalf("another key: %v", err)
	}
	waitFor(t, "the stranger's handshake counted", func() bool { return rotating.Stats().HandshakesFailed >= 1 })
	if st := rotating.Stats(); st.HandshakesTimedOut != 0 {
		t.Errorf("a wrong key timed out instead of failing at once: %+v", st)
	}
	// Frames flow under the accepted key.
	got := newReceived(1)
	rotating.Handle(testProto, got.handler)
	if err := moved.Send(ctx, rotating.ID(), testProto, []byte("under the new key")); err != nil {
		t.Fatal(err)
	}
	if f := got.next(t); string(f.frame) != "under the new key" {
		t.Fatalf("got %q", f.frame)
	}
}
