package p2p

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/pnet"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	mss "github.com/multiformats/go-multistream"
)

// IdentifyAddr learns the peer id of the host listening at addr, a TCP multiaddr without
// /p2p/ (as DNS discovery finds them: an address carries no peer id). libp2p dials only
// peers whose id it knows, so IdentifyAddr runs the first steps of a connection by hand —
// TCP, the private-network key, then the Noise handshake with the peer id check off — and
// closes it once the peer has proved which key it holds. It opens no libp2p connection:
// Connect with addr/p2p/<id> does that, and checks the id again.
//
// The id is the one the host at addr held at that moment; a host that refuses us later
// (its allow-list) still answers here. An address of this host itself answers with this
// host's id. Errors wrap ErrHandshake when something listens at addr but the handshake
// failed (most likely another cluster key).
func (h *Host) IdentifyAddr(ctx context.Context, addr multiaddr.Multiaddr) (peer.ID, error) {
	if err := h.checkOpen(); err != nil {
		return "", fmt.Errorf("identify %s: %w", addr, err)
	}
	if _, id := peer.SplitAddr(addr); id != "" {
		return id, nil
	}
	na, err := manet.ToNetAddr(addr)
	if err != nil {
		return "", fmt.Errorf("identify %s: %w", addr, err)
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, na.Network(), na.String())
	if err != nil {
		return "", fmt.Errorf("identify %s: %w", addr, err)
	}
	defer func() { _ = raw.Close() }()
	// The handshake below reads and writes the raw connection without contexts: the
	// deadline (or closing it when ctx ends) bounds it.
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	defer stop()
	id, err := h.handshakeID(ctx, raw)
	if err != nil {
		if ctx.Err() != nil {
			err = errors.Join(ctx.Err(), err)
		}
		return "", fmt.Errorf("identify %s: %w: %w", addr, ErrHandshake, err)
	}
	return id, nil
}

// handshakeID runs the security handshake of an outbound connection on conn and returns
// the peer id the other side proved.
func (h *Host) handshakeID(ctx context.Context, conn net.Conn) (peer.ID, error) {
	if h.cfg.ClusterKey != nil {
		var err error
		if conn, err = pnet.NewProtectedConn(h.cfg.ClusterKey, conn); err != nil {
			return "", fmt.Errorf("private network: %w", err)
		}
	}
	if err := mss.SelectProtoOrFail(noise.ID, conn); err != nil {
		return "", fmt.Errorf("negotiate %s: %w", noise.ID, err)
	}
	tpt, err := noise.New(noise.ID, h.cfg.Identity, nil)
	if err != nil {
		return "", err
	}
	session, err := tpt.WithSessionOptions(noise.DisablePeerIDCheck())
	if err != nil {
		return "", err
	}
	sc, err := session.SecureOutbound(ctx, conn, "")
	if err != nil {
		return "", fmt.Errorf("noise handshake: %w", err)
	}
	return sc.RemotePeer(), nil
}
