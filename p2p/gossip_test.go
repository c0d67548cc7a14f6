package p2p

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
)

const testTopic = "shardmesh-test/events"

// joinAndSubscribe joins testTopic on each host and subscribes.
func joinAndSubscribe(t *testing.T, hosts ...*Host) ([]*Topic, []*Subscription) {
	t.Helper()
	var topics []*Topic
	var subs []*Subscription
	for _, h := range hosts {
		topic, err := h.Join(testTopic)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := topic.Subscribe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Cancel)
		topics = append(topics, topic)
		subs = append(subs, sub)
	}
	return topics, subs
}

// TestGossipBothWays: messages arrive with the publisher as From; a host does not get its
// own messages back.
func TestGossipBothWays(t *testing.T) {
	key := newPSK(t)
	a := newHost(t, func(c *Config) { c.ClusterKey = key })
	b := newHost(t, func(c *Config) { c.ClusterKey = key })
	connect(t, a, b)
	topics, subs := joinAndSubscribe(t, a, b)
	if again, err := a.Join(testTopic); err != nil || again != topics[0] {
		t.Fatalf("second Join: %v, %v", again, err)
	}
	ctx := testContext(t)
	for i, topic := range topics {
		if err := topic.WaitPeers(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := topic.Publish(ctx, fmt.Appendf(nil, "from %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []struct {
		from peer.ID
		data string
	}{{b.ID(), "from 1"}, {a.ID(), "from 0"}} {
		m, err := subs[i].Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.From != want.from || string(m.Data) != want.data {
			t.Fatalf("host %d got %q from %s, want %q from %s", i, m.Data, m.From, want.data, want.from)
		}
	}
	if s := a.Stats(); s.GossipPublished != 1 || s.GossipReceived != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestGossipFromIsOriginThroughRelay: in a line a—b—c, c gets a's message through b, and
// From names a (the signed origin), not b.
func TestGossipFromIsOriginThroughRelay(t *testing.T) {
	a, b, c := newHost(t, nil), newHost(t, nil), newHost(t, nil)
	connect(t, a, b)
	connect(t, b, c)
	topics, subs := joinAndSubscribe(t, a, b, c)
	ctx := testContext(t)
	if err := topics[0].WaitPeers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := topics[1].WaitPeers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// b relays only to its mesh, which its heartbeat builds after the subscriptions are
	// known (within about a second): publish until c has one.
	stop := make(chan struct{})
	published := make(chan error, 1)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := topics[0].Publish(ctx, []byte("hello")); err != nil {
				published <- err
				return
			}
			select {
			case <-stop:
				published <- nil
				return
			case <-tick.C:
			}
		}
	}()
	m, err := subs[2].Next(ctx)
	close(stop)
	if perr := <-published; perr != nil {
		t.Fatal(perr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if m.From != a.ID() || string(m.Data) != "hello" {
		t.Fatalf("c got %q from %s, want from a (%s)", m.Data, m.From, a.ID())
	}
}

// TestGossipBurst: 1,000 back-to-back messages all arrive (raised queue sizes).
func TestGossipBurst(t *testing.T) {
	const n = 1000
	a, b, c := newHost(t, nil), newHost(t, nil), newHost(t, nil)
	connect(t, a, b)
	connect(t, a, c)
	connect(t, b, c)
	topics, subs := joinAndSubscribe(t, a, b, c)
	ctx := testContext(t)
	if err := topics[0].WaitPeers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := topics[0].Publish(ctx, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range subs[1:] {
		seen := make(map[string]bool, n)
		for len(seen) < n {
			m, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("after %d of %d messages: %v", len(seen), n, err)
			}
			if m.From != a.ID() {
				t.Fatalf("message from %s", m.From)
			}
			seen[string(m.Data)] = true
		}
	}
}

// TestGossipClosedToOutsiders: a host with another cluster key (or none) cannot join the
// mesh, so it reads none of the cluster's gossip.
func TestGossipClosedToOutsiders(t *testing.T) {
	t.Parallel() // waits out a 5 s dial timeout
	key := newPSK(t)
	a := newHost(t, func(c *Config) { c.ClusterKey = key })
	b := newHost(t, func(c *Config) { c.ClusterKey = key })
	outsiders := []*Host{
		newHost(t, func(c *Config) { c.ClusterKey = newPSK(t) }),
		newHost(t, func(c *Config) { c.ClusterKey = pnet.PSK(nil) }),
	}
	connect(t, a, b)
	var wg sync.WaitGroup
	for _, o := range outsiders { // in parallel: the keyless one waits out libp2p's 5 s dial timeout
		wg.Go(func() {
			if _, err := o.Connect(testContext(t), a.Addrs()[0]); !errors.Is(err, ErrHandshake) {
				t.Errorf("outsider connect: got %v, want ErrHandshake", err)
			}
		})
	}
	wg.Wait()
	topics, subs := joinAndSubscribe(t, append([]*Host{a, b}, outsiders...)...)
	ctx := testContext(t)
	if err := topics[0].WaitPeers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := topics[0].Publish(ctx, []byte("members only")); err != nil {
		t.Fatal(err)
	}
	if m, err := subs[1].Next(ctx); err != nil || string(m.Data) != "members only" {
		t.Fatalf("member: %q, %v", m.Data, err)
	}
	// The member has it; give the outsiders as long again and then some.
	for i, sub := range subs[2:] {
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		m, err := sub.Next(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("outsider %d read %q (%v)", i, m.Data, err)
		}
	}
	if peers := topics[0].Peers(); len(peers) != 1 || peers[0] != b.ID() {
		t.Fatalf("topic peers %v, want only b", peers)
	}
}

func TestSubscriptionCancelAndClose(t *testing.T) {
	a := newHost(t, nil)
	topic, err := a.Join(testTopic)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := topic.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	sub.Cancel()
	if _, err := sub.Next(testContext(t)); err == nil {
		t.Fatal("Next after Cancel returned a message")
	}
	sub2, err := topic.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sub2.Next(testContext(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: got %v, want ErrClosed", err)
	}
	if _, err := a.Join("other"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Join after Close: got %v, want ErrClosed", err)
	}
}
