package p2p

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// stubGate admits the peers in admitted.
type stubGate struct {
	epoch    atomic.Uint64
	mu       sync.Mutex
	admitted map[peer.ID]bool
	refused  map[peer.ID]int
	moved    chan struct{} // closed at the next admit
}

func (g *stubGate) Changed(epoch uint64) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.moved == nil {
		g.moved = make(chan struct{})
	}
	if g.epoch.Load() != epoch {
		done := make(chan struct{})
		close(done)
		return done
	}
	return g.moved
}

func (g *stubGate) Epoch() uint64 { return g.epoch.Load() }

func (g *stubGate) Admits(id peer.ID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.admitted[id]
}

func (g *stubGate) Refused(id peer.ID, _ protocol.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refused[id]++
}

func (g *stubGate) admit(id peer.ID) {
	g.mu.Lock()
	g.admitted[id] = true
	g.epoch.Add(1)
	if g.moved != nil {
		close(g.moved)
		g.moved = nil
	}
	g.mu.Unlock()
}

func (g *stubGate) refusedOf(id peer.ID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused[id]
}

// TestHandleGated: a gated protocol hands its handler only the frames of admitted peers;
// the others are told to the gate and the stream stays up, so a peer admitted later (the
// gate's epoch moves) is served on the same stream; a frame that arrives a moment before
// its peer is admitted waits for it, instead of being dropped.
func TestHandleGated(t *testing.T) {
	target := newHost(t, nil)
	member, stranger := newHost(t, nil), newHost(t, nil)
	g := &stubGate{admitted: map[peer.ID]bool{member.ID(): true}, refused: map[peer.ID]int{}}
	got := newReceived(4)
	target.HandleGated(testProto, g, got.handler)
	connect(t, member, target)
	connect(t, stranger, target)
	ctx := testContext(t)
	send := func(from *Host, frame string) {
		t.Helper()
		if err := from.Send(ctx, target.ID(), testProto, []byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	send(stranger, "forged")
	send(member, "from a member")
	if f := got.next(t); f.from != member.ID() || string(f.frame) != "from a member" {
		t.Fatalf("handler got %q from %s", f.frame, f.from)
	}
	waitFor(t, "the stranger's frame refused", func() bool { return g.refusedOf(stranger.ID()) == 1 })
	g.admit(stranger.ID())
	send(stranger, "admitted now")
	if f := got.next(t); f.from != stranger.ID() || string(f.frame) != "admitted now" {
		t.Fatalf("handler got %q from %s", f.frame, f.from)
	}

	// A peer that sends just before it is admitted: its frame waits, and is handled.
	late := newHost(t, nil)
	connect(t, late, target)
	if err := late.Send(ctx, target.ID(), testProto, []byte("early")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the early frame read", func() bool { return target.Stats().FramesIn >= 4 })
	g.admit(late.ID())
	if f := got.next(t); f.from != late.ID() || string(f.frame) != "early" {
		t.Fatalf("handler got %q from %s", f.frame, f.from)
	}
	if n := g.refusedOf(late.ID()); n != 0 {
		t.Errorf("the early frame was refused (%d)", n)
	}
}
