package p2p

import (
	"context"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Gate says which peers' gossip a topic relays and delivers: the admitted members of the
// current membership (package trust implements it). The member protocols' frames are
// admitted where they take effect, by the member's state machines (node.Core and
// remember.Machine); gossip is decided here, since a message this host accepts is relayed
// to its other peers before anything takes it in.
type Gate interface {
	// Admits reports whether id's messages may pass now.
	Admits(id peer.ID) bool
	// Refused is told of each message dropped because its origin is not admitted: proto is
	// the topic's name.
	Refused(id peer.ID, proto protocol.ID)
}

// Gate lets only the messages whose origin g admits through the topic: the others are
// neither delivered here nor relayed to other peers, and are told to g. This host's own
// messages always pass.
func (t *Topic) Gate(g Gate) error {
	self := t.h.ID()
	return t.h.ps.RegisterTopicValidator(t.name, func(_ context.Context, _ peer.ID, m *pubsub.Message) pubsub.ValidationResult {
		origin := m.GetFrom()
		if origin == self || g.Admits(origin) {
			return pubsub.ValidationAccept
		}
		g.Refused(origin, protocol.ID(t.name))
		return pubsub.ValidationIgnore
	}, pubsub.WithValidatorInline(true))
}
