package p2p

import (
	"bufio"
	"errors"
	"io"

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
	h.HandleSinks(proto, func(from peer.ID) FrameSink { return handlerSink{from, fh} })
}

// FrameSink takes the frames of one stream that a peer opened with Send: Frame for each, in
// order, and Flush whenever the next frame has not fully arrived (before the stream's
// reader waits for the network), so that a sink can batch what arrives together. frame is
// valid only during the call: copy what you keep. An error from either resets the stream,
// as a FrameHandler's does.
type FrameSink interface {
	Frame(frame []byte) error
	Flush() error
}

// HandleSinks serves Send streams for proto, each with its own FrameSink from newSink,
// replacing any previous handler for proto; otherwise as Handle.
func (h *Host) HandleSinks(proto protocol.ID, newSink func(from peer.ID) FrameSink) {
	h.h.SetStreamHandler(proto, func(st network.Stream) {
		if !h.enter() {
			_ = st.Reset()
			return
		}
		defer h.wg.Done()
		h.serveFrames(st, newSink(st.Conn().RemotePeer()))
	})
}

// handlerSink is a FrameHandler as a FrameSink.
type handlerSink struct {
	from peer.ID
	fh   FrameHandler
}

func (s handlerSink) Frame(frame []byte) error { return s.fh(s.from, frame) }
func (handlerSink) Flush() error               { return nil }

func (h *Host) serveFrames(st network.Stream, sink FrameSink) {
	fr := NewFrameReader(bufio.NewReaderSize(st, readBufferSize), h.cfg.MaxFrameSize)
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
		err = sink.Frame(frame)
		if err == nil && !fr.Buffered() {
			err = sink.Flush()
		}
		if err != nil {
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
