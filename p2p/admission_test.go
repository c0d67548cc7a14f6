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
	g.mu.Unlock()
	g.epoch.Add(1)
}

func (g *stubGate) refusedOf(id peer.ID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused[id]
}

// TestHandleGated: a gated protocol hands its handler only the frames of admitted peers;
// the others are told to the gate and the stream stays up, so a peer admitted later (the
// gate's epoch moves) is served on the same stream.
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
}
