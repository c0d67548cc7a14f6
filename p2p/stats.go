package p2p

import "sync/atomic"

// Stats is a snapshot of a host's counters since New. Frame counts cover both the
// long-lived framed streams (Send/Handle) and per-call streams (Stream); byte counts are
// frame payload bytes, without length prefixes.
type Stats struct {
	FramesIn  uint64 // frames read from peers
	FramesOut uint64 // frames written to peers
	BytesIn   uint64 // payload bytes of FramesIn
	BytesOut  uint64 // payload bytes of FramesOut

	MalformedFrames uint64 // frames from peers that were not valid frames (stream reset)
	OversizedFrames uint64 // frames from peers announced larger than MaxFrameSize (stream reset)
	HandlerErrors   uint64 // FrameHandler calls that returned an error (stream reset)
	StreamsReset    uint64 // streams we reset because of bad input or a handler error

	StreamsOpened uint64 // outbound Send streams opened, re-opens included
	StreamsBroken uint64 // outbound Send streams that broke (peer gone, reset, write timeout)
	SendQueueFull uint64 // Send calls refused with ErrQueueFull
	FramesDropped uint64 // queued frames dropped because their stream broke before the write

	GossipPublished uint64 // messages published on gossip topics
	GossipReceived  uint64 // messages from other peers returned by Subscription.Next

	Peers int // peers with at least one open connection now

	// Inbound connections before their handshake completed (limits.go):
	InboundRefused     uint64 // refused at once by the limits (per address, in total)
	HandshakesFailed   uint64 // closed by the peer or failed (another cluster key, not libp2p)
	HandshakesTimedOut uint64 // closed by this host after Config.HandshakeTimeout
	Unauthenticated    int64  // in their handshake now
}

// counters are the live atomic counters behind Stats.
type counters struct {
	framesIn, framesOut, bytesIn, bytesOut           atomic.Uint64
	malformed, oversized, handlerErrors, resets      atomic.Uint64
	streamsOpened, streamsBroken, queueFull, dropped atomic.Uint64
	gossipPublished, gossipReceived                  atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		FramesIn:        c.framesIn.Load(),
		FramesOut:       c.framesOut.Load(),
		BytesIn:         c.bytesIn.Load(),
		BytesOut:        c.bytesOut.Load(),
		MalformedFrames: c.malformed.Load(),
		OversizedFrames: c.oversized.Load(),
		HandlerErrors:   c.handlerErrors.Load(),
		StreamsReset:    c.resets.Load(),
		StreamsOpened:   c.streamsOpened.Load(),
		StreamsBroken:   c.streamsBroken.Load(),
		SendQueueFull:   c.queueFull.Load(),
		FramesDropped:   c.dropped.Load(),
		GossipPublished: c.gossipPublished.Load(),
		GossipReceived:  c.gossipReceived.Load(),
	}
}
