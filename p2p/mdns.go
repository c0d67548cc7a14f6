package p2p

import (
	"io"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
)

// discoveredBuffer is how many mDNS finds wait for a reader of Discovered; more are
// dropped (mDNS announces again, so a dropped find comes back).
const discoveredBuffer = 64

// Discovered returns the peers that mDNS finds on the local network, each possibly many
// times. It returns nil when mDNS is off (Config.MDNS) or could not start; the reason is
// logged once by New. The channel is never closed.
func (h *Host) Discovered() <-chan peer.AddrInfo {
	if h.discovered == nil {
		return nil
	}
	return h.discovered
}

func (h *Host) startMDNS() {
	if !h.cfg.MDNS {
		h.log.Info("mDNS discovery off (Config.MDNS is false)")
		return
	}
	start := h.cfg.startMDNS
	if start == nil {
		start = startMDNS
	}
	found := make(chan peer.AddrInfo, discoveredBuffer)
	closer, err := start(h.h, h.cfg.MDNSTag, func(info peer.AddrInfo) {
		if info.ID == h.ID() {
			return
		}
		select {
		case found <- info:
		default:
		}
	})
	if err != nil {
		h.log.Warn("mDNS discovery off: it could not start (no multicast interface?); "+
			"connect to members by address instead", "tag", h.cfg.MDNSTag, "err", err)
		return
	}
	h.mdns = closer
	h.discovered = found
	h.log.Info("mDNS discovery on", "tag", h.cfg.MDNSTag)
}

// startMDNS starts go-libp2p's mDNS service.
func startMDNS(h host.Host, tag string, found func(peer.AddrInfo)) (io.Closer, error) {
	svc := mdns.NewMdnsService(h, tag, notifee(found))
	if err := svc.Start(); err != nil {
		return nil, err
	}
	return svc, nil
}

// notifee adapts a function to mdns.Notifee.
type notifee func(peer.AddrInfo)

func (n notifee) HandlePeerFound(info peer.AddrInfo) { n(info) }
