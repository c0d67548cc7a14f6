package p2p

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// DiagnoseDial explains, for an operator, why a Connect to addr failed with err. A peer
// without a cluster key, when this member has one, may never complete the handshake, which
// from the dialling side looks like a peer that never answers; so when the handshake did
// not complete, it probes addr with a plain TCP connection to tell "nothing listens there"
// from "something listens but will not talk to us".
func DiagnoseDial(addr multiaddr.Multiaddr, err error) string {
	switch {
	case errors.Is(err, ErrNotAllowed):
		return "this member's own allow-list (--allow-peers) does not include that peer"
	case errors.Is(err, ErrPeerIDMismatch):
		return "another peer listens at that address: take the address from the member's addrs file"
	case errors.Is(err, ErrHandshake):
		return "the peer refused the handshake: it holds a different --cluster-key (or none), or its --allow-peers does not include this member"
	case errors.Is(err, ErrHandshakeTimeout):
		return "the peer accepted the connection but did not complete the handshake in time: it is hung, overloaded or flooded with connections, or has no --cluster-key while this member has one"
	}
	na, conn, dialErr := probeTCP(addr)
	if na == nil {
		return fmt.Sprintf("cannot probe %s: %v", addr, dialErr)
	}
	if dialErr != nil {
		var ne net.Error
		if errors.As(dialErr, &ne) && ne.Timeout() {
			return fmt.Sprintf("%s does not answer: a wrong address or a firewall?", na)
		}
		return fmt.Sprintf("nothing accepts connections at %s: is the member running? (%v)", na, dialErr)
	}
	conn.Close()
	return fmt.Sprintf("%s accepts TCP connections but the libp2p handshake did not complete: the member is hung or flooded, or holds a different --cluster-key (or none), or does not allow this member", na)
}

// AcceptsTCP reports whether something accepts plain TCP connections at addr's host and
// port (within a second): a member that times out a dial is then there but silent.
func AcceptsTCP(addr multiaddr.Multiaddr) bool {
	_, conn, err := probeTCP(addr)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// probeTCP opens a plain TCP connection to addr's transport address (nil when addr has
// none).
func probeTCP(addr multiaddr.Multiaddr) (net.Addr, net.Conn, error) {
	transport, _ := peer.SplitAddr(addr)
	if transport == nil {
		transport = addr
	}
	na, err := manet.ToNetAddr(transport)
	if err != nil {
		return nil, nil, err
	}
	conn, err := net.DialTimeout(na.Network(), na.String(), time.Second)
	return na, conn, err
}
