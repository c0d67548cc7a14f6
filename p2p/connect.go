package p2p

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/sec"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/multiformats/go-multiaddr"
)

// errNotIdentified: the dial succeeded on our side but the peer never identified itself;
// a peer whose allow-list refuses us closes the connection right after the security
// handshake, which our side may already have counted as established.
var errNotIdentified = errors.New("the peer closed the connection right after the handshake")

// Connect dials the peer at addr, which must end in /p2p/<peer id>, remembers addr for
// later dials (as AddAddrs does) and returns the peer's id once the connection is up and
// the peer has identified itself. Connecting to a peer already connected returns at once.
//
// When the peer listening at the address is not the one its /p2p/ id names, the error
// wraps ErrPeerIDMismatch and says so first. When the peer refuses the connection during
// the handshake — it holds a different cluster key (or none, or we have none), or its
// allow-list does not name us — the error wraps ErrHandshake. When the peer accepts the
// TCP connection and the handshake does not complete before ctx ends, it wraps
// ErrHandshakeTimeout instead. When our own allow-list does not name the peer it wraps
// ErrNotAllowed.
func (h *Host) Connect(ctx context.Context, addr multiaddr.Multiaddr) (peer.ID, error) {
	info, err := peer.AddrInfoFromP2pAddr(addr)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", addr, ErrNoPeerID)
	}
	if info.ID == h.ID() {
		return "", fmt.Errorf("connect %s: that is this host's own peer id", addr)
	}
	h.h.Peerstore().AddAddrs(info.ID, info.Addrs, peerstore.PermanentAddrTTL)
	if err := h.dial(ctx, "connect", info.ID); err != nil {
		return "", err
	}
	return info.ID, nil
}

// newStream opens a libp2p stream to id for proto, dialling if needed.
func (h *Host) newStream(ctx context.Context, id peer.ID, proto protocol.ID) (network.Stream, error) {
	op := fmt.Sprintf("open stream for %s", proto)
	if err := h.dial(ctx, op, id); err != nil {
		return nil, err
	}
	st, err := h.h.NewStream(ctx, id, proto)
	if err != nil {
		return nil, h.dialError(ctx, op, id, err)
	}
	return st, nil
}

// dial makes sure a connection to id is up and identified, dialling the addresses the
// peerstore knows. Errors say what op was for and are classified by dialError.
func (h *Host) dial(ctx context.Context, op string, id peer.ID) error {
	if err := h.checkOpen(); err != nil {
		return fmt.Errorf("%s to %s: %w", op, id, err)
	}
	if !h.gater.allows(id) {
		return fmt.Errorf("%s to %s: %w (Config.AllowPeers)", op, id, ErrNotAllowed)
	}
	if h.h.Network().Connectedness(id) == network.Connected {
		return nil
	}
	sub, err := h.h.EventBus().Subscribe([]any{
		new(event.EvtPeerIdentificationCompleted),
		new(event.EvtPeerIdentificationFailed),
	})
	if err != nil {
		return fmt.Errorf("%s to %s: watch identify: %w", op, id, err)
	}
	defer func() { _ = sub.Close() }()
	// Drain the subscription while dialling: the event bus blocks emitters on a full
	// subscriber, and other peers may identify meanwhile.
	stop := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		res := errNotIdentified
		note := func(ev any) {
			switch ev := ev.(type) {
			case event.EvtPeerIdentificationCompleted:
				if ev.Peer == id {
					res = nil
				}
			case event.EvtPeerIdentificationFailed:
				if ev.Peer == id && res != nil {
					res = fmt.Errorf("identify: %w", ev.Reason)
				}
			}
		}
		for {
			select {
			case ev := <-sub.Out():
				note(ev)
			case <-stop:
				// Connect returned after identify finished, so its event is queued.
				for {
					select {
					case ev := <-sub.Out():
						note(ev)
					default:
						result <- res
						return
					}
				}
			}
		}
	}()
	err = h.h.Connect(ctx, peer.AddrInfo{ID: id})
	if errors.Is(err, swarm.ErrDialBackoff) {
		// A dial that failed a moment ago — two members dialling each other at once, a peer
		// restarting — puts its address in libp2p's backoff, and every send to the peer
		// then fails for seconds without trying. Senders here retry on their own schedule
		// (heartbeats, outboxes, rounds), so dial again now.
		err = h.h.Connect(network.WithForceDirectDial(ctx, "shardmesh redials on its own schedule"), peer.AddrInfo{ID: id})
	}
	close(stop)
	identified := <-result
	if err != nil {
		return h.dialError(ctx, op, id, err)
	}
	switch {
	case identified == nil:
		return nil
	case errors.Is(identified, errNotIdentified) && h.h.Network().Connectedness(id) == network.Connected:
		return nil // connected meanwhile by the peer's own dial, identified before we listened
	default:
		return h.handshakeError(op, id, identified)
	}
}

// checkOpen returns ErrClosed once Close has been called.
func (h *Host) checkOpen() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	return nil
}

// dialError wraps an error from dialling id, recognising a peer that is not id, a refused
// handshake, a handshake that did not complete in time (which is not a refusal: a hung,
// stopped or flooded peer accepts TCP connections and then says nothing) and a peer that
// did not answer at all.
func (h *Host) dialError(ctx context.Context, op string, id peer.ID, err error) error {
	var mismatch sec.ErrPeerIDMismatch
	switch {
	case errors.Is(err, swarm.ErrGaterDisallowedConnection):
		return fmt.Errorf("%s to %s: %w (Config.AllowPeers): %w", op, id, ErrNotAllowed, err)
	case errors.As(err, &mismatch):
		return fmt.Errorf("%w: the address names peer %s, but the peer listening there is %s: the member's identity changed (a new data directory?) "+
			"or the address belongs to another member now: take the address from its addrs file: %s to %s: %w",
			ErrPeerIDMismatch, mismatch.Expected, mismatch.Actual, op, id, err)
	case handshakeTimedOut(err) || ctx.Err() != nil && (refusedInHandshake(err) || h.acceptsTCP(id)):
		deadline := ctx.Err()
		if deadline == nil {
			deadline = context.DeadlineExceeded
		}
		return fmt.Errorf("%s to %s: %w: the peer accepted the TCP connection but did not complete the handshake in time: "+
			"it is hung, stopped, or overloaded or flooded with connections (its log says so), or not a shardmesh member; "+
			"a peer with another key refuses at once (one without a key, when we have one, may wait like this): %w: %w", op, id, ErrHandshakeTimeout, deadline, err)
	case refusedInHandshake(err):
		return h.handshakeError(op, id, err)
	case ctx.Err() != nil || timedOut(err):
		return fmt.Errorf("%s to %s: %w: nothing answered at its address in time: %w", op, id, context.DeadlineExceeded, err)
	default:
		return fmt.Errorf("%s to %s: %w", op, id, err)
	}
}

// handshakeTimedOut reports whether a dial timed out after the TCP connection was made, in
// the handshake, on some address.
func handshakeTimedOut(err error) bool {
	var dialErr *swarm.DialError
	if !errors.As(err, &dialErr) {
		return false
	}
	for _, te := range dialErr.DialErrors {
		var opErr *net.OpError
		if isTimeout(te.Cause) && (!errors.As(te.Cause, &opErr) || opErr.Op != "dial") {
			return true
		}
	}
	return false
}

// acceptsTCP reports whether one of the addresses known for id accepts a TCP connection.
func (h *Host) acceptsTCP(id peer.ID) bool {
	for _, a := range h.h.Peerstore().Addrs(id) {
		if AcceptsTCP(a) {
			return true
		}
	}
	return false
}

// timedOut reports whether every address of a dial failed by timing out.
func timedOut(err error) bool {
	var dialErr *swarm.DialError
	if !errors.As(err, &dialErr) || len(dialErr.DialErrors) == 0 {
		return errors.Is(err, context.DeadlineExceeded)
	}
	for _, te := range dialErr.DialErrors {
		if !isTimeout(te.Cause) {
			return false
		}
	}
	return true
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// handshakeError wraps err with ErrHandshake and the likely causes.
func (h *Host) handshakeError(op string, id peer.ID, err error) error {
	return fmt.Errorf("%s to %s: %w: the peer accepted the TCP connection but refused the handshake; "+
		"most likely it runs with a different --cluster-key (or only one side has one), "+
		"or its allow-list does not include our peer id %s, "+
		"or this address opened too many new connections to it (it is not a member there yet; its log says so): %w", op, id, ErrHandshake, h.ID(), err)
}

// refusedInHandshake reports whether a dial error came from a peer that accepted the TCP
// connection and then failed the upgrade (private-network key, security handshake, muxer
// negotiation), as opposed to an address where nobody listens or that cannot be reached.
func refusedInHandshake(err error) bool {
	var dialErr *swarm.DialError
	if !errors.As(err, &dialErr) {
		return false
	}
	for _, te := range dialErr.DialErrors {
		var opErr *net.OpError
		if errors.As(te.Cause, &opErr) && opErr.Op == "dial" || isTimeout(te.Cause) || errors.Is(te.Cause, swarm.ErrDialBackoff) {
			continue // TCP itself failed (refused, unreachable, timed out), the peer said nothing in time, or no dial was made
		}
		return true
	}
	return false
}
