package remember

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/p2p"
)

// outboxDepth is how many frames may wait for a peer whose stream is not open (being
// dialled, or gone). Beyond it frames are dropped: the rounds that sent them count the
// peer as not answering, which is what it is.
const outboxDepth = 256

// outboxes sends frames to peers without ever blocking the caller: a frame goes straight
// onto the peer's open stream (TrySend), or else to the peer's outbox, whose goroutine
// dials and waits for room.
type outboxes struct {
	ctx     context.Context
	host    *p2p.Host
	timeout time.Duration
	dropped func()
	spawn   func(func()) bool // runs a goroutine the store's Close waits for

	mu sync.Mutex
	by map[peer.ID]chan []byte
}

// send sends frame to peer to; frame must not be changed afterwards.
func (o *outboxes) send(to peer.ID, frame []byte) {
	err := o.host.TrySend(to, Protocol, frame)
	if err == nil {
		return
	}
	if !errors.Is(err, p2p.ErrWouldBlock) {
		o.dropped()
		return
	}
	select {
	case o.box(to) <- frame:
	default:
		o.dropped()
	}
}

func (o *outboxes) box(to peer.ID) chan []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := o.by[to]
	if ch == nil {
		ch = make(chan []byte, outboxDepth)
		if !o.spawn(func() { o.drain(to, ch) }) {
			return nil // closing: a nil channel takes nothing, the frame is dropped
		}
		o.by[to] = ch
	}
	return ch
}

// drain sends the frames queued for to, each given the round timeout to find a stream and
// room on it.
func (o *outboxes) drain(to peer.ID, ch chan []byte) {
	for {
		select {
		case frame := <-ch:
			if err := o.sendWaiting(to, frame); err != nil {
				o.dropped()
			}
		case <-o.ctx.Done():
			return
		}
	}
}

func (o *outboxes) sendWaiting(to peer.ID, frame []byte) error {
	ctx, cancel := context.WithTimeout(o.ctx, o.timeout)
	defer cancel()
	for {
		err := o.host.Send(ctx, to, Protocol, frame)
		if !errors.Is(err, p2p.ErrQueueFull) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Millisecond):
		}
	}
}
