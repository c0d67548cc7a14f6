package p2p

import (
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
)

// TestBadInputResetsOnlyThatStream: a peer writing an oversized announcement or garbage
// on a raw stream gets that stream reset; the host counts and logs it, allocates nothing
// like the announced size, and keeps serving the same peer's next stream and other peers.
func TestBadInputResetsOnlyThatStream(t *testing.T) {
	tests := []struct {
		name          string
		bytes         []byte
		closeAfter    bool
		wantMalformed uint64
		wantOversized uint64
	}{
		{"100 MB announced", binary.AppendUvarint(nil, 100<<20), false, 0, 1},
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false, 1, 0},
		{"truncated frame", append(binary.AppendUvarint(nil, 1000), "short"...), true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := newHost(t, nil)
			attacker := newHost(t, nil)
			bystander := newHost(t, nil)
			got := newReceived(10)
			server.Handle(testProto, got.handler)
			connect(t, attacker, server)
			connect(t, bystander, server)
			ctx := testContext(t)

			// The bystander's stream is open before the attack and must survive it.
			if err := bystander.Send(ctx, server.ID(), testProto, []byte("before")); err != nil {
				t.Fatal(err)
			}
			if f := got.next(t); string(f.frame) != "before" {
				t.Fatalf("got %q", f.frame)
			}

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			raw, err := attacker.LibP2P().NewStream(ctx, server.ID(), testProto)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Write(tt.bytes); err != nil {
				t.Fatal(err)
			}
			if tt.closeAfter {
				if err := raw.CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			// The server answers with a reset, which our read sees.
			if _, err := io.ReadAll(raw); !errors.Is(err, network.ErrReset) {
				t.Fatalf("raw stream read: got %v, want a reset", err)
			}
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 20<<20 {
				t.Fatalf("the attack cost %d bytes of allocation", alloc)
			}
			s := server.Stats()
			if s.MalformedFrames != tt.wantMalformed || s.OversizedFrames != tt.wantOversized || s.StreamsReset != 1 {
				t.Fatalf("server stats %+v", s)
			}

			// Same peer, next stream (through our layer): served.
			if err := attacker.Send(ctx, server.ID(), testProto, []byte("again")); err != nil {
				t.Fatal(err)
			}
			if f := got.next(t); string(f.frame) != "again" || f.from != attacker.ID() {
				t.Fatalf("got %q from %s", f.frame, f.from)
			}
			// Other peer, existing stream: still served.
			if err := bystander.Send(ctx, server.ID(), testProto, []byte("after")); err != nil {
				t.Fatal(err)
			}
			if f := got.next(t); string(f.frame) != "after" || f.from != bystander.ID() {
				t.Fatalf("got %q from %s", f.frame, f.from)
			}
			if s := bystander.Stats(); s.StreamsOpened != 1 || s.StreamsBroken != 0 {
				t.Fatalf("bystander's stream was disturbed: %+v", s)
			}
		})
	}
}

// TestOversizedFrameFromPeerWithLargerLimit: a sender with a larger MaxFrameSize than the
// receiver gets its stream reset, not the receiver's memory used.
func TestOversizedFrameFromPeerWithLargerLimit(t *testing.T) {
	a := newHost(t, func(c *Config) { c.MaxFrameSize = 1 << 20 })
	b := newHost(t, func(c *Config) { c.MaxFrameSize = 1 << 10 })
	got := newReceived(1)
	b.Handle(testProto, got.handler)
	connect(t, a, b)
	ctx := testContext(t)
	if err := a.Send(ctx, b.ID(), testProto, make([]byte, 1<<15)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sender to see the reset", func() bool { return a.Stats().StreamsBroken == 1 })
	if s := b.Stats(); s.OversizedFrames != 1 || s.StreamsReset != 1 || s.FramesIn != 0 {
		t.Fatalf("receiver stats %+v", s)
	}
	if err := a.Send(ctx, b.ID(), testProto, []byte("small")); err != nil {
		t.Fatal(err)
	}
	if f := got.next(t); string(f.frame) != "small" {
		t.Fatalf("got %q", f.frame)
	}
}
