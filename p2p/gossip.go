package p2p

import (
	"context"
	"fmt"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Topic is a gossipsub topic the host has joined. Messages are signed by their origin
// and verified on receipt (strict signing), so Message.From is authenticated. Payloads
// are limited to gossipsub's 1 MiB message size. Gossip is best effort: what must not be
// lost goes over Send with an acknowledgement.
type Topic struct {
	h    *Host
	name string
	t    *pubsub.Topic
}

// Message is a gossip message from another peer.
type Message struct {
	From peer.ID // the peer that published it (verified signature), not the relay
	Data []byte
}

// Join joins the gossip topic named name and returns it; joining the same name again
// returns the same *Topic.
func (h *Host) Join(name string) (*Topic, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("join topic %s: %w", name, ErrClosed)
	}
	if t, ok := h.topics[name]; ok {
		return t, nil
	}
	pt, err := h.ps.Join(name)
	if err != nil {
		return nil, fmt.Errorf("join topic %s: %w", name, err)
	}
	t := &Topic{h: h, name: name, t: pt}
	h.topics[name] = t
	return t, nil
}

// Name returns the topic's name.
func (t *Topic) Name() string { return t.name }

// Publish signs data and sends it to the topic's peers. It returns once the message is
// queued for them, not when they have it.
func (t *Topic) Publish(ctx context.Context, data []byte) error {
	if err := t.t.Publish(ctx, data); err != nil {
		return fmt.Errorf("publish on topic %s: %w", t.name, t.h.closedOr(err))
	}
	t.h.stats.gossipPublished.Add(1)
	return nil
}

// Subscribe starts receiving the topic's messages. The subscription buffers
// Config.GossipQueue messages; beyond that gossipsub drops messages for a slow reader.
func (t *Topic) Subscribe() (*Subscription, error) {
	s, err := t.t.Subscribe(pubsub.WithBufferSize(t.h.cfg.GossipQueue))
	if err != nil {
		return nil, fmt.Errorf("subscribe to topic %s: %w", t.name, t.h.closedOr(err))
	}
	return &Subscription{t: t, s: s}, nil
}

// Peers returns the peers known to be subscribed to the topic.
func (t *Topic) Peers() []peer.ID { return t.t.ListPeers() }

// WaitPeers blocks until at least n other peers are known to be subscribed to the topic
// (so that a Publish reaches them), or ctx ends.
func (t *Topic) WaitPeers(ctx context.Context, n int) error {
	events, err := t.t.EventHandler()
	if err != nil {
		return fmt.Errorf("watch peers of topic %s: %w", t.name, err)
	}
	defer events.Cancel()
	for len(t.t.ListPeers()) < n {
		// Wait for a join event, and look again every 200 ms in any case.
		wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, _ = events.NextPeerEvent(wait)
		cancel()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("wait for %d peers on topic %s: %w", n, t.name, err)
		}
	}
	return nil
}

// Subscription receives a topic's messages. Cancel it when done.
type Subscription struct {
	t *Topic
	s *pubsub.Subscription
}

// Next returns the next message published by another peer, skipping the host's own. It
// returns an error when ctx ends, the subscription is cancelled, or the host closes
// (wrapping ErrClosed).
func (s *Subscription) Next(ctx context.Context) (Message, error) {
	h := s.t.h
	self := h.ID()
	// pubsub does not end subscriptions when it stops: end the wait when the host closes.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.life, cancel)()
	for {
		m, err := s.s.Next(ctx)
		if err != nil {
			return Message{}, fmt.Errorf("next message on topic %s: %w", s.t.name, h.closedOr(err))
		}
		from := m.GetFrom()
		if from == self {
			continue
		}
		h.stats.gossipReceived.Add(1)
		return Message{From: from, Data: m.Data}, nil
	}
}

// Cancel stops the subscription; Next then returns an error.
func (s *Subscription) Cancel() { s.s.Cancel() }

// closedOr returns err, wrapped with ErrClosed if the host is closed.
func (h *Host) closedOr(err error) error {
	if h.checkOpen() != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}
