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
// with another cluster key cannot even complete the handshake, which from the dialling side
// looks like a peer that never answers; so when the handshake did not complete, it probes
// addr with a plain TCP connection to tell "nothing listens there" from "something listens
// but will not talk to us".
func DiagnoseDial(addr multiaddr.Multiaddr, err error) string {
	switch {
	case errors.Is(err, ErrNotAllowed):
		return "this member's own allow-list (--allow-peers) does not include that peer"
	case errors.Is(err, ErrHandshake):
		return "the peer refused the handshake: it holds a different --cluster-key (or none), or its --allow-peers does not include this member"
	}
	transport, _ := peer.SplitAddr(addr)
	if transport == nil {
		transport = addr
	}
	na, convErr := manet.ToNetAddr(transport)
	if convErr != nil {
		return fmt.Sprintf("cannot probe %s: %v", addr, convErr)
	}
	conn, dialErr := net.DialTimeout(na.Network(), na.String(), time.Second)
	if dialErr != nil {
		var ne net.Error
		if errors.As(dialErr, &ne) && ne.Timeout() {
			return fmt.Sprintf("%s does not answer: a wrong address or a firewall?", na)
		}
		return fmt.Sprintf("nothing accepts connections at %s: is the member running? (%v)", na, dialErr)
	}
	conn.Close()
	return fmt.Sprintf("%s accepts TCP connections but the libp2p handshake did not complete: the member most likely holds a different --cluster-key (or none), or does not allow this member", na)
}
