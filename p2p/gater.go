package p2p

import (
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// allowListGater is a connmgr.ConnectionGater that admits only the peers of an
// allow-list: outbound before dialling, inbound right after the security handshake
// (the earliest point where the remote peer id is authenticated).
type allowListGater struct {
	allowed map[peer.ID]struct{}
}

func newAllowListGater(ids []peer.ID) *allowListGater {
	g := &allowListGater{allowed: make(map[peer.ID]struct{}, len(ids))}
	for _, id := range ids {
		g.allowed[id] = struct{}{}
	}
	return g
}

// allows reports whether id is on the list; a nil gater allows everyone.
func (g *allowListGater) allows(id peer.ID) bool {
	if g == nil {
		return true
	}
	_, ok := g.allowed[id]
	return ok
}

func (g *allowListGater) InterceptPeerDial(id peer.ID) bool { return g.allows(id) }

func (g *allowListGater) InterceptAddrDial(id peer.ID, _ multiaddr.Multiaddr) bool {
	return g.allows(id)
}

func (g *allowListGater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

func (g *allowListGater) InterceptSecured(_ network.Direction, id peer.ID, _ network.ConnMultiaddrs) bool {
	return g.allows(id)
}

func (g *allowListGater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) {
	return true, 0
}
