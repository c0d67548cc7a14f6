package p2p

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// A write buffer with more capacity than shrinkAbove is released after shrinkAfter
// batches in a row used less than a quarter of it, so that a burst does not pin memory
// for good while steady traffic reuses its buffers.
const (
	shrinkAbove = 4 << 20
	shrinkAfter = 256
)

// errPeerWrote breaks a Send stream on which the peer wrote: those streams are one-way.
var errPeerWrote = errors.New("peer wrote on a send-only stream")

// senderKey names one outbound Send stream.
type senderKey struct {
	peer  peer.ID
	proto protocol.ID
}

// sender owns the one outbound stream for a (peer, protocol): Send appends frames to
// pending under mu; a writer goroutine swaps pending for an empty buffer and writes the
// whole batch with one Write. A watcher goroutine blocks in Read so that a reset or close
// by the peer is noticed at once, not at the next write. Both goroutines belong to one
// stream generation; when the stream breaks, the next Send opens a new one.
type sender struct {
	h   *Host
	key senderKey

	openMu sync.Mutex // serialises opening a stream

	mu       sync.Mutex
	st       network.Stream // nil: no stream open
	gen      uint64         // generation of st
	stop     chan struct{}  // closed when st is dropped; stops its writer
	closed   bool           // host closing: no more streams
	pending  []byte         // queued frames, encoded
	pendingN int            // frames in pending
	pendingB uint64         // payload bytes in pending
	spare    []byte         // the other buffer, reused for the next pending
	underuse int            // batches in a row that used under a quarter of a large buffer
	queued   uint64         // frames ever queued
	done     uint64         // frames written or dropped
	dropErr  error          // why frames were dropped since the last Flush; nil: none
	progress chan struct{}  // closed when done advances, for Flush; nil: nobody waits
	wake     chan struct{}  // Send → writer of the current stream: pending is not empty
}

// Send queues frame for the peer to on protocol proto and returns; the frame is copied,
// so the caller may reuse it at once. Frames to one (peer, protocol) arrive in the order
// Send queued them, on ONE long-lived stream that is opened (dialling if needed) by the
// first Send, and re-opened by the next Send after it breaks. A writer goroutine writes
// whatever has queued in one batch.
//
// Send returns an error wrapping ErrFrameTooLarge when len(frame) > Config.MaxFrameSize,
// ErrQueueFull when Config.SendQueue frames or Config.SendQueueBytes bytes are waiting,
// ErrHandshake/ErrNotAllowed or another error when the stream cannot be opened, and
// ErrClosed after Close: in all these cases nothing was queued. A nil return means
// queued: if the stream then breaks before the frame is written, the frame is dropped,
// counted in Stats.FramesDropped and reported by the next Flush.
func (h *Host) Send(ctx context.Context, to peer.ID, proto protocol.ID, frame []byte) error {
	if len(frame) > h.cfg.MaxFrameSize {
		return fmt.Errorf("send %d bytes to %s on %s: %w (limit %d)", len(frame), to, proto, ErrFrameTooLarge, h.cfg.MaxFrameSize)
	}
	s, err := h.sender(to, proto)
	if err != nil {
		return err
	}
	return s.send(ctx, frame)
}

// TrySend queues frame like Send, but only if the stream to (to, proto) is already open and
// its queue has room: it never dials, opens a stream or waits, and returns ErrWouldBlock when
// Send would have to. Callers on latency-critical goroutines try it first and fall back to a
// goroutine that calls Send.
func (h *Host) TrySend(to peer.ID, proto protocol.ID, frame []byte) error {
	if len(frame) > h.cfg.MaxFrameSize {
		return fmt.Errorf("send %d bytes to %s on %s: %w (limit %d)", len(frame), to, proto, ErrFrameTooLarge, h.cfg.MaxFrameSize)
	}
	s, err := h.sender(to, proto)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.st == nil || s.closed || !s.enqueue(frame) {
		s.mu.Unlock()
		return ErrWouldBlock
	}
	s.wakeWriter()
	return nil
}

// SendFrames is Send for n frames at once, framed back to back in framed as AppendFrame
// writes them (a length prefix, then the frame): they are queued together, in order, or
// not at all; framed is copied. It returns an error wrapping ErrMalformedFrame when framed
// does not hold exactly n well-formed frames, and otherwise what Send returns.
func (h *Host) SendFrames(ctx context.Context, to peer.ID, proto protocol.ID, framed []byte, n int) error {
	payload, err := h.checkFramed(to, proto, framed, n)
	if err != nil {
		return err
	}
	s, err := h.sender(to, proto)
	if err != nil {
		return err
	}
	return s.sendFramed(ctx, framed, n, payload)
}

// TrySendFrames is TrySend for n frames framed back to back, as SendFrames takes them.
func (h *Host) TrySendFrames(to peer.ID, proto protocol.ID, framed []byte, n int) error {
	payload, err := h.checkFramed(to, proto, framed, n)
	if err != nil {
		return err
	}
	s, err := h.sender(to, proto)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.st == nil || s.closed || !s.enqueueFramed(framed, n, payload) {
		s.mu.Unlock()
		return ErrWouldBlock
	}
	s.wakeWriter()
	return nil
}

// checkFramed checks that framed holds n frames, none larger than MaxFrameSize, and
// returns the bytes of their payloads.
func (h *Host) checkFramed(to peer.ID, proto protocol.ID, framed []byte, n int) (uint64, error) {
	var payload uint64
	for rest, i := framed, 0; ; i++ {
		if len(rest) == 0 {
			if i != n {
				return 0, fmt.Errorf("send to %s on %s: %w: %d frames, not %d", to, proto, ErrMalformedFrame, i, n)
			}
			return payload, nil
		}
		size, m := binary.Uvarint(rest)
		if m <= 0 || size > uint64(len(rest)-m) {
			return 0, fmt.Errorf("send to %s on %s: %w: frame %d is cut short", to, proto, ErrMalformedFrame, i)
		}
		if size > uint64(h.cfg.MaxFrameSize) {
			return 0, fmt.Errorf("send %d bytes to %s on %s: %w (limit %d)", size, to, proto, ErrFrameTooLarge, h.cfg.MaxFrameSize)
		}
		payload += size
		rest = rest[m+int(size):]
	}
}

// Flush waits until every frame that Send queued to (to, proto) before the call has been
// written to the stream (handed to the connection, not yet read by the peer) or dropped.
// It returns an error wrapping ErrStreamBroken if frames on this stream were dropped since
// the previous Flush, or ctx's error.
func (h *Host) Flush(ctx context.Context, to peer.ID, proto protocol.ID) error {
	h.mu.Lock()
	s := h.senders[senderKey{to, proto}]
	h.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.flush(ctx)
}

// sender returns the sender for (to, proto), creating it.
func (h *Host) sender(to peer.ID, proto protocol.ID) (*sender, error) {
	key := senderKey{to, proto}
	// Fast path for a run of Sends to one destination: no lock, no map hashing. A cached
	// sender of a closed host refuses the frame itself.
	if s := h.lastSender.Load(); s != nil && s.key == key {
		return s, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("send to %s on %s: %w", to, proto, ErrClosed)
	}
	s := h.senders[key]
	if s == nil {
		s = &sender{h: h, key: key}
		h.senders[key] = s
	}
	h.lastSender.Store(s)
	return s, nil
}

// lockOpen locks s with its stream open, opening it first when needed; on an error s is
// not locked.
func (s *sender) lockOpen(ctx context.Context) error {
	s.mu.Lock()
	for s.st == nil {
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("send to %s on %s: %w", s.key.peer, s.key.proto, ErrClosed)
		}
		s.mu.Unlock()
		if err := s.open(ctx); err != nil {
			return err
		}
		s.mu.Lock()
	}
	return nil
}

func (s *sender) send(ctx context.Context, frame []byte) error {
	if err := s.lockOpen(ctx); err != nil {
		return err
	}
	if !s.enqueue(frame) {
		n, b := s.pendingN, len(s.pending)
		s.mu.Unlock()
		s.h.stats.queueFull.Add(1)
		return fmt.Errorf("send to %s on %s: %w (%d frames, %d bytes waiting)", s.key.peer, s.key.proto, ErrQueueFull, n, b)
	}
	s.wakeWriter()
	return nil
}

func (s *sender) sendFramed(ctx context.Context, framed []byte, n int, payload uint64) error {
	if err := s.lockOpen(ctx); err != nil {
		return err
	}
	if !s.enqueueFramed(framed, n, payload) {
		queued, b := s.pendingN, len(s.pending)
		s.mu.Unlock()
		s.h.stats.queueFull.Add(1)
		return fmt.Errorf("send to %s on %s: %w (%d frames, %d bytes waiting)", s.key.peer, s.key.proto, ErrQueueFull, queued, b)
	}
	s.wakeWriter()
	return nil
}

// enqueue appends frame to the open stream's queue if it has room (s.mu held; on success it
// is released by wakeWriter).
func (s *sender) enqueue(frame []byte) bool {
	cfg := &s.h.cfg
	if s.pendingN >= cfg.SendQueue || len(s.pending)+len(frame)+uvarintLen(len(frame)) > cfg.SendQueueBytes {
		return false
	}
	s.pending = AppendFrame(s.pending, frame)
	s.pendingN++
	s.pendingB += uint64(len(frame))
	s.queued++
	return true
}

// enqueueFramed appends n frames framed back to back (payload bytes of payload) to the open
// stream's queue if it has room, or if the queue is empty (a batch larger than the queue's
// bounds still goes, alone); s.mu is held as for enqueue.
func (s *sender) enqueueFramed(framed []byte, n int, payload uint64) bool {
	cfg := &s.h.cfg
	if s.pendingN > 0 && (s.pendingN+n > cfg.SendQueue || len(s.pending)+len(framed) > cfg.SendQueueBytes) {
		return false
	}
	s.pending = append(s.pending, framed...)
	s.pendingN += n
	s.pendingB += payload
	s.queued += uint64(n)
	return true
}

// wakeWriter releases s.mu and wakes the stream's writer.
func (s *sender) wakeWriter() {
	wake := s.wake
	s.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// open opens a stream unless another Send did meanwhile.
func (s *sender) open(ctx context.Context) error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.mu.Lock()
	if s.st != nil || s.closed {
		s.mu.Unlock()
		return nil // the caller's loop re-checks
	}
	s.mu.Unlock()

	st, err := s.h.newStream(ctx, s.key.peer, s.key.proto)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = st.Reset()
		return fmt.Errorf("send to %s on %s: %w", s.key.peer, s.key.proto, ErrClosed)
	}
	// Each stream has its own writer and wake-up channel, so that a writer on its way
	// out cannot swallow the wake-up meant for its successor.
	s.gen++
	gen := s.gen
	stop, wake := make(chan struct{}), make(chan struct{}, 1)
	s.st, s.stop, s.wake = st, stop, wake
	s.mu.Unlock()
	s.h.stats.streamsOpened.Add(1)
	s.h.log.Debug("send stream opened", "peer", s.key.peer, "protocol", s.key.proto)
	if !s.h.spawn(func() { s.write(st, gen, stop, wake) }, func() { s.watch(st, gen) }) {
		s.drop(gen, ErrClosed, 0)
		return fmt.Errorf("send to %s on %s: %w", s.key.peer, s.key.proto, ErrClosed)
	}
	return nil
}

// write is the writer goroutine of stream generation gen.
func (s *sender) write(st network.Stream, gen uint64, stop, wake <-chan struct{}) {
	timeout := s.h.cfg.WriteTimeout
	var deadline time.Time
	for {
		select {
		case <-wake:
		case <-stop:
			return
		}
		for {
			s.mu.Lock()
			if s.gen != gen || s.st == nil || len(s.pending) == 0 {
				s.mu.Unlock()
				break
			}
			batch, n, b := s.pending, s.pendingN, s.pendingB
			s.pending, s.pendingN, s.pendingB = s.spare[:0], 0, 0
			s.spare = nil
			s.mu.Unlock()

			// Every write gets between timeout/2 and timeout; the deadline is moved only
			// when less than half is left (setting one allocates a timer).
			if now := time.Now(); deadline.Sub(now) < timeout/2 {
				deadline = now.Add(timeout)
				_ = st.SetWriteDeadline(deadline)
			}
			_, err := st.Write(batch)

			s.mu.Lock()
			s.spare = s.recycle(batch)
			if err != nil {
				s.mu.Unlock()
				s.drop(gen, fmt.Errorf("write: %w", err), n)
				return
			}
			s.done += uint64(n)
			s.h.stats.framesOut.Add(uint64(n))
			s.h.stats.bytesOut.Add(b)
			s.progressLocked()
			s.mu.Unlock()
		}
	}
}

// recycle returns batch emptied for reuse as the next pending buffer, or nil when a
// large buffer has been mostly idle for a while. Called with mu held.
func (s *sender) recycle(batch []byte) []byte {
	if cap(batch) <= shrinkAbove || len(batch) >= cap(batch)/4 {
		s.underuse = 0
		return batch[:0]
	}
	s.underuse++
	if s.underuse >= shrinkAfter {
		s.underuse = 0
		return nil
	}
	return batch[:0]
}

// watch is the watcher goroutine of stream generation gen: the peer never writes on a
// Send stream, so Read returns only when the stream is reset or closed.
func (s *sender) watch(st network.Stream, gen uint64) {
	var b [1]byte
	_, err := st.Read(b[:])
	if err == nil {
		err = errPeerWrote
	}
	s.drop(gen, err, 0)
}

// drop ends stream generation gen, if it is still the current one: it resets the
// stream, drops the frames still queued, and lets the next Send open a new stream. lost
// frames (a batch whose write failed) are accounted as dropped in any case.
func (s *sender) drop(gen uint64, cause error, lost int) {
	s.mu.Lock()
	var st network.Stream
	n := lost
	if s.gen == gen && s.st != nil {
		st = s.st
		s.st = nil
		close(s.stop)
		n += s.pendingN
		s.pending, s.pendingN, s.pendingB, s.spare = nil, 0, 0, nil
		s.h.stats.streamsBroken.Add(1)
	}
	if n > 0 {
		s.dropErr = fmt.Errorf("%w: %d frames to %s on %s: %w", ErrStreamBroken, n, s.key.peer, s.key.proto, cause)
		s.h.stats.dropped.Add(uint64(n))
	}
	// Account and count before Flush can return.
	s.done += uint64(n)
	s.progressLocked()
	s.mu.Unlock()

	switch {
	case n > 0:
		s.h.log.Warn("send stream broke, queued frames dropped", "peer", s.key.peer, "protocol", s.key.proto,
			"dropped", n, "err", cause)
	case st != nil:
		s.h.log.Debug("send stream closed", "peer", s.key.peer, "protocol", s.key.proto, "err", cause)
	}
	if st != nil {
		_ = st.Reset()
	}
}

// shutdown drops the current stream for good (the host is closing).
func (s *sender) shutdown() {
	s.mu.Lock()
	s.closed = true
	gen := s.gen
	s.mu.Unlock()
	s.drop(gen, ErrClosed, 0)
}

// flush implements Host.Flush.
func (s *sender) flush(ctx context.Context) error {
	s.mu.Lock()
	target := s.queued
	for s.done < target {
		if s.progress == nil {
			s.progress = make(chan struct{})
		}
		ch := s.progress
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("flush to %s on %s: %w", s.key.peer, s.key.proto, ctx.Err())
		}
		s.mu.Lock()
	}
	err := s.dropErr
	s.dropErr = nil
	s.mu.Unlock()
	return err
}

// progressLocked wakes Flush calls waiting for done to advance.
func (s *sender) progressLocked() {
	if s.progress != nil {
		close(s.progress)
		s.progress = nil
	}
}

// breakSenders drops the Send streams to id (its last connection closed).
func (h *Host) breakSenders(id peer.ID, cause error) {
	h.mu.Lock()
	var broken []*sender
	for key, s := range h.senders {
		if key.peer == id {
			broken = append(broken, s)
		}
	}
	h.mu.Unlock()
	for _, s := range broken {
		s.mu.Lock()
		gen := s.gen
		s.mu.Unlock()
		s.drop(gen, cause, 0)
	}
}

// uvarintLen is the size of n's uvarint encoding.
func uvarintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}
