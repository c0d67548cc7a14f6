package p2p

import (
	"errors"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// errPeerDisconnected breaks the Send streams of a peer whose last connection closed.
var errPeerDisconnected = errors.New("last connection to the peer closed")

// connEvent is one transition of a peer between connected and not.
type connEvent struct {
	id        peer.ID
	connected bool
}

// connEvents turns libp2p's per-connection notifications into per-peer up/down events
// and delivers them, in order, on one goroutine, so that callbacks may block briefly or
// call back into the host (Send, Connect) without deadlocking libp2p.
type connEvents struct {
	h *Host

	mu      sync.Mutex
	conns   map[peer.ID]int
	subs    []func(peer.ID, bool)
	queue   []connEvent
	stopped bool
	wake    chan struct{}
	done    chan struct{}
}

func newConnEvents(h *Host) *connEvents {
	e := &connEvents{
		h:     h,
		conns: make(map[peer.ID]int),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	go e.dispatch()
	return e
}

// Notify registers fn to be called when a peer's first connection opens
// (connected=true) and when its last connection closes (connected=false). Calls come in
// order from a single goroutine; fn should return promptly and must not call Close (which
// waits for that goroutine). fn may call Send, Connect and the rest. Peers already
// connected when fn is registered are not reported. A peer whose allow-list refuses us
// may show up briefly (up, then down) while Connect fails with ErrHandshake.
func (h *Host) Notify(fn func(id peer.ID, connected bool)) {
	h.conns.mu.Lock()
	defer h.conns.mu.Unlock()
	h.conns.subs = append(h.conns.subs, fn)
}

func (e *connEvents) notifiee() network.Notifiee {
	return &network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) {
			e.change(c.RemotePeer(), +1)
		},
		DisconnectedF: func(_ network.Network, c network.Conn) {
			e.change(c.RemotePeer(), -1)
		},
		ListenF:      func(network.Network, multiaddr.Multiaddr) {},
		ListenCloseF: func(network.Network, multiaddr.Multiaddr) {},
	}
}

func (e *connEvents) change(id peer.ID, delta int) {
	e.mu.Lock()
	before := e.conns[id]
	after := before + delta
	if after <= 0 {
		delete(e.conns, id)
	} else {
		e.conns[id] = after
	}
	down := before > 0 && after <= 0
	up := before == 0 && after > 0
	if (up || down) && !e.stopped {
		e.queue = append(e.queue, connEvent{id: id, connected: up})
	}
	e.mu.Unlock()
	if down {
		// Before anyone hears of it: a Send issued in reaction to the event re-opens.
		e.h.breakSenders(id, errPeerDisconnected)
	}
	if up || down {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

func (e *connEvents) dispatch() {
	defer close(e.done)
	for range e.wake {
		for {
			e.mu.Lock()
			if len(e.queue) == 0 || e.stopped {
				stopped := e.stopped
				e.mu.Unlock()
				if stopped {
					return
				}
				break
			}
			ev := e.queue[0]
			e.queue = e.queue[1:]
			subs := e.subs
			e.mu.Unlock()
			for _, fn := range subs {
				fn(ev.id, ev.connected)
			}
		}
	}
}

// stop ends delivery; events not yet delivered are discarded.
func (e *connEvents) stop() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.stopped = true
	e.queue = nil
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	<-e.done
}
