package p2p

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestSendInOrder: frames queued from one goroutine arrive in order, and the caller may
// reuse its buffer right after Send.
func TestSendInOrder(t *testing.T) {
	const n = 20000
	a := newHost(t, nil)
	b := newHost(t, nil)
	got := newReceived(n)
	b.Handle(testProto, got.handler)
	connect(t, a, b)
	ctx := testContext(t)
	buf := make([]byte, 8)
	for i := range n {
		binary.BigEndian.PutUint64(buf, uint64(i))
		if err := a.Send(ctx, b.ID(), testProto, buf); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for i := range n {
		f := got.next(t)
		if seq := binary.BigEndian.Uint64(f.frame); seq != uint64(i) || f.from != a.ID() {
			t.Fatalf("frame %d: got sequence %d from %s", i, seq, f.from)
		}
	}
	if err := a.Flush(ctx, b.ID(), testProto); err != nil {
		t.Fatal(err)
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.FramesOut != n || sa.BytesOut != 8*n || sb.FramesIn != n || sb.BytesIn != 8*n || sa.StreamsOpened != 1 {
		t.Fatalf("stats: sender %+v, receiver %+v", sa, sb)
	}
}

// TestSendConcurrent: many goroutines sending to one peer lose nothing and keep each
// goroutine's order.
func TestSendConcurrent(t *testing.T) {
	const senders, each = 8, 2000
	a := newHost(t, nil)
	b := newHost(t, nil)
	got := newReceived(senders * each)
	b.Handle(testProto, got.handler)
	connect(t, a, b)
	ctx := testContext(t)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			buf := make([]byte, 16)
			for i := range each {
				binary.BigEndian.PutUint64(buf, uint64(g))
				binary.BigEndian.PutUint64(buf[8:], uint64(i))
				if err := a.Send(ctx, b.ID(), testProto, buf); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	next := make([]uint64, senders)
	for range senders * each {
		f := got.next(t)
		g, i := binary.BigEndian.Uint64(f.frame), binary.BigEndian.Uint64(f.frame[8:])
		if i != next[g] {
			t.Fatalf("sender %d: got frame %d, want %d", g, i, next[g])
		}
		next[g]++
	}
	if s := a.Stats(); s.StreamsOpened != 1 {
		t.Fatalf("opened %d streams, want one", s.StreamsOpened)
	}
}

func TestSendFrameTooLarge(t *testing.T) {
	a := newHost(t, func(c *Config) { c.MaxFrameSize = 1000 })
	b := newHost(t, nil)
	err := a.Send(testContext(t), b.ID(), testProto, make([]byte, 1001))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("got %v, want ErrFrameTooLarge", err)
	}
	if len(a.LibP2P().Network().Peers()) != 0 {
		t.Fatal("a too-large frame still dialled the peer")
	}
}

// TestSendQueueFull: when the peer stops reading, Send fills the queue and then reports
// ErrQueueFull; every frame that Send accepted arrives once the peer reads again.
func TestSendQueueFull(t *testing.T) {
	for _, tt := range []struct {
		name      string
		configure func(*Config)
	}{
		{"frames", func(c *Config) { c.MaxFrameSize = 64 << 10; c.SendQueue = 4 }},
		{"bytes", func(c *Config) { c.MaxFrameSize = 64 << 10; c.SendQueueBytes = 200 << 10 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newHost(t, tt.configure)
			b := newHost(t, nil)
			release := make(chan struct{})
			var mu sync.Mutex
			count := 0
			all := make(chan struct{})
			accepted := -1
			b.Handle(testProto, func(peer.ID, []byte) error {
				<-release
				mu.Lock()
				defer mu.Unlock()
				count++
				if count == accepted {
					close(all)
				}
				return nil
			})
			connect(t, a, b)
			ctx := testContext(t)
			frame := make([]byte, 64<<10)
			sent := 0
			for ; sent < 5000; sent++ { // yamux window + socket buffers hold well under 5000 × 64 KiB
				err := a.Send(ctx, b.ID(), testProto, frame)
				if errors.Is(err, ErrQueueFull) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if sent == 5000 {
				t.Fatal("never got ErrQueueFull")
			}
			if s := a.Stats(); s.SendQueueFull != 1 {
				t.Fatalf("SendQueueFull = %d, want 1", s.SendQueueFull)
			}
			mu.Lock()
			accepted = sent
			mu.Unlock()
			close(release)
			select {
			case <-all:
			case <-ctx.Done():
				t.Fatalf("only %d of %d accepted frames arrived", count, sent)
			}
			if err := a.Flush(ctx, b.ID(), testProto); err != nil {
				t.Fatal(err)
			}
			if s := a.Stats(); s.FramesDropped != 0 {
				t.Fatalf("FramesDropped = %d", s.FramesDropped)
			}
		})
	}
}

// TestSendReopensAfterPeerRestart: after the peer restarts (same identity, new port),
// the next Send opens a new stream and the frame arrives.
func TestSendReopensAfterPeerRestart(t *testing.T) {
	a := newHost(t, nil)
	bKey := newKey(t)
	b := newHost(t, func(c *Config) { c.Identity = bKey })
	got := newReceived(1)
	b.Handle(testProto, got.handler)
	down := make(chan peer.ID, 1)
	a.Notify(func(id peer.ID, up bool) {
		if !up {
			down <- id
		}
	})
	connect(t, a, b)
	ctx := testContext(t)
	if err := a.Send(ctx, b.ID(), testProto, []byte("before")); err != nil {
		t.Fatal(err)
	}
	if f := got.next(t); string(f.frame) != "before" {
		t.Fatalf("got %q", f.frame)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if id := <-down; id != b.ID() {
		t.Fatalf("down event for %s", id)
	}

	b2 := newHost(t, func(c *Config) { c.Identity = bKey })
	got2 := newReceived(1)
	b2.Handle(testProto, got2.handler)
	a.AddAddrs(b2.ID(), b2.Addrs())
	if err := a.Send(ctx, b2.ID(), testProto, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if f := got2.next(t); string(f.frame) != "after" || f.from != a.ID() {
		t.Fatalf("got %q from %s", f.frame, f.from)
	}
	if s := a.Stats(); s.StreamsOpened != 2 || s.StreamsBroken != 1 {
		t.Fatalf("StreamsOpened %d, StreamsBroken %d; want 2, 1", s.StreamsOpened, s.StreamsBroken)
	}
}

// TestHandlerErrorResetsStream: a handler error resets that stream (counted); the
// sender notices, and its next Send opens a new stream that is served.
func TestHandlerErrorResetsStream(t *testing.T) {
	a := newHost(t, nil)
	b := newHost(t, nil)
	got := newReceived(10)
	b.Handle(testProto, func(from peer.ID, frame []byte) error {
		if string(frame) == "poison" {
			return errors.New("cannot decode")
		}
		return got.handler(from, frame)
	})
	connect(t, a, b)
	ctx := testContext(t)
	if err := a.Send(ctx, b.ID(), testProto, []byte("poison")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sender to see the reset", func() bool { return a.Stats().StreamsBroken == 1 })
	if s := b.Stats(); s.HandlerErrors != 1 || s.StreamsReset != 1 {
		t.Fatalf("receiver stats %+v", s)
	}
	if err := a.Send(ctx, b.ID(), testProto, []byte("fine")); err != nil {
		t.Fatal(err)
	}
	if f := got.next(t); string(f.frame) != "fine" {
		t.Fatalf("got %q", f.frame)
	}
}

// TestFlushReportsDroppedFrames: frames queued to a peer that stopped reading are dropped
// when the write times out, and Flush says so.
func TestFlushReportsDroppedFrames(t *testing.T) {
	a := newHost(t, func(c *Config) { c.WriteTimeout = 200 * time.Millisecond })
	b := newHost(t, nil)
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	b.Handle(testProto, func(peer.ID, []byte) error {
		<-block
		return nil
	})
	connect(t, a, b)
	ctx := testContext(t)
	frame := make([]byte, 1<<20)
	for range 64 { // far more than the yamux window and socket buffers
		if err := a.Send(ctx, b.ID(), testProto, frame); err != nil {
			t.Fatal(err)
		}
	}
	err := a.Flush(ctx, b.ID(), testProto)
	if !errors.Is(err, ErrStreamBroken) {
		t.Fatalf("Flush: got %v, want ErrStreamBroken", err)
	}
	// The Send loop may outlast one write timeout, so frames may be spread over more
	// than one stream; every frame is accounted for either way.
	if s := a.Stats(); s.FramesDropped == 0 || s.StreamsBroken == 0 || s.FramesDropped+s.FramesOut != 64 {
		t.Fatalf("stats %+v", s)
	}
	if err := a.Flush(ctx, b.ID(), testProto); err != nil {
		t.Fatalf("second Flush: %v, want nil (already reported)", err)
	}
}
