package p2p

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// stubGate admits the peers in admitted.
type stubGate struct {
	mu       sync.Mutex
	admitted map[peer.ID]bool
	refused  map[peer.ID]int
}

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

func (g *stubGate) refusedOf(id peer.ID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused[id]
}

// publishUntil publishes data on topic every 50 ms until done holds (the subscriptions
// and meshes form meanwhile).
func publishUntil(t *testing.T, topic *Topic, data string, done func() bool) {
	t.Helper()
	ctx := testContext(t)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		if err := topic.Publish(ctx, []byte(data)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("timed out publishing " + data)
		}
	}
}

// TestTopicGate: a gated topic delivers the messages of admitted origins and drops the
// others, telling the gate.
func TestTopicGate(t *testing.T) {
	target, member, stranger := newHost(t, nil), newHost(t, nil), newHost(t, nil)
	connect(t, member, target)
	connect(t, stranger, target)
	topics, subs := joinAndSubscribe(t, target, member, stranger)
	g := &stubGate{admitted: map[peer.ID]bool{member.ID(): true}, refused: map[peer.ID]int{}}
	if err := topics[0].Gate(g); err != nil {
		t.Fatal(err)
	}
	publishUntil(t, topics[2], "forged", func() bool { return g.refusedOf(stranger.ID()) > 0 })
	got := make(chan string, 1)
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	go func() {
		m, err := subs[0].Next(ctx)
		if err == nil {
			got <- m.From.String() + " " + string(m.Data)
		}
		close(got)
	}()
	var first string
	publishUntil(t, topics[1], "from a member", func() bool {
		select {
		case first = <-got:
			return true
		default:
			return false
		}
	})
	if want := member.ID().String() + " from a member"; first != want {
		t.Fatalf("the gated topic delivered %q, want %q", first, want)
	}
}
