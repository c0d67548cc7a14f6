package p2p

import (
	"bufio"
	"errors"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// readBufferSize is the bufio buffer per inbound stream: frames up to this size are
// handed to handlers without a copy, and many small frames come in with one read.
const readBufferSize = 64 << 10

// FrameHandler handles one frame that peer from sent with Send. frame is valid only
// during the call: copy what you keep. Frames of one stream come one call at a time, in
// order; frames of different streams (peers) come concurrently. A returned error resets
// that stream (the peer's next Send opens a new one); it is logged with the peer id and
// counted in Stats.HandlerErrors.
type FrameHandler func(from peer.ID, frame []byte) error

// Handle serves Send streams for proto with fh, replacing any previous handler for proto.
// A malformed or oversized frame resets the stream it came on, is logged and counted, and
// affects no other stream.
func (h *Host) Handle(proto protocol.ID, fh FrameHandler) {
	h.h.SetStreamHandler(proto, func(st network.Stream) {
		if !h.enter() {
			_ = st.Reset()
			return
		}
		defer h.wg.Done()
		h.serveFrames(st, nil, fh)
	})
}

// serveFrames reads st's frames and hands them to fh; with a gate, only those of a peer
// it admits (HandleGated).
func (h *Host) serveFrames(st network.Stream, g Gate, fh FrameHandler) {
	from := st.Conn().RemotePeer()
	fr := NewFrameReader(bufio.NewReaderSize(st, readBufferSize), h.cfg.MaxFrameSize)
	var epoch, waited uint64
	admitted := true
	if g != nil {
		epoch, admitted = g.Epoch(), g.Admits(from)
		waited = epoch + 1 // not waited yet
	}
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			if err == io.EOF {
				_ = st.Close()
				return
			}
			h.readFailed(st, err)
			return
		}
		h.stats.framesIn.Add(1)
		h.stats.bytesIn.Add(uint64(len(frame)))
		if g != nil {
			if e := g.Epoch(); e != epoch {
				epoch, admitted = e, g.Admits(from)
			}
			if !admitted && waited != epoch {
				waited = epoch
				t := time.NewTimer(admitGrace)
				select {
				case <-g.Changed(epoch):
					epoch, admitted = g.Epoch(), g.Admits(from)
				case <-t.C:
				}
				t.Stop()
			}
			if !admitted {
				g.Refused(from, st.Protocol())
				continue
			}
		}
		if err := fh(from, frame); err != nil {
			h.stats.handlerErrors.Add(1)
			h.resetStream(st, "frame handler failed", err)
			return
		}
	}
}

// readFailed handles a failed frame read on an inbound stream: bad input is counted,
// logged and answered with a reset; a stream the peer reset or closed is just released.
func (h *Host) readFailed(st network.Stream, err error) {
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		h.stats.oversized.Add(1)
		h.resetStream(st, "oversized frame", err)
	case errors.Is(err, ErrMalformedFrame):
		h.stats.malformed.Add(1)
		h.resetStream(st, "malformed frame", err)
	default:
		h.log.Debug("stream ended", "peer", st.Conn().RemotePeer(), "protocol", st.Protocol(), "err", err)
		_ = st.Reset()
	}
}

// resetStream resets st because of bad input or a handler error, logging and counting it.
func (h *Host) resetStream(st network.Stream, reason string, err error) {
	h.stats.resets.Add(1)
	h.log.Warn("stream reset", "peer", st.Conn().RemotePeer(), "protocol", st.Protocol(), "reason", reason, "err", err)
	_ = st.Reset()
}
