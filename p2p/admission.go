package p2p

import (
	"context"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Gate decides which peers may send frames on the member protocols: the admitted members
// of the current membership (package trust implements it).
type Gate interface {
	// Epoch changes whenever Admits may answer differently: a stream asks Admits again
	// only then.
	Epoch() uint64
	// Admits reports whether id may send frames now.
	Admits(id peer.ID) bool
	// Refused is told of each frame (or gossip message) dropped because its sender is not
	// admitted: proto is the protocol, or the topic's name.
	Refused(id peer.ID, proto protocol.ID)
	// Changed returns a channel closed once the epoch is past epoch.
	Changed(epoch uint64) <-chan struct{}
}

// admitGrace is how long a stream waits, once per epoch of the gate, for its peer to be
// admitted before its frames are dropped: a member that joined a moment ago sends before
// the membership that admits it has reached this member (the joining member itself gets
// frames before it has taken in the answer to its join), and a request dropped then would
// cost its sender a whole round's timeout.
const admitGrace = 2 * time.Second

// HandleGated serves Send streams for proto with fh, as Handle does, but hands fh only the
// frames of peers g admits; the others are dropped and told to g, and the stream stays up.
// The decision is taken once per stream and epoch of g, not per frame; a stream whose peer
// is not admitted first waits up to admitGrace for the epoch to move (admitGrace says why).
func (h *Host) HandleGated(proto protocol.ID, g Gate, fh FrameHandler) {
	h.h.SetStreamHandler(proto, func(st network.Stream) {
		if !h.enter() {
			_ = st.Reset()
			return
		}
		defer h.wg.Done()
		h.serveFrames(st, g, fh)
	})
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
