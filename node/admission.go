package node

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/trust"
)

// Admission in a member (package trust, docs/security.md): a member joins only when the
// member it asks admits it (membership.Config.Admit, with its credential when the cluster
// has an authority), and only admitted members of the current membership speak the member
// protocols: the core (core_admission.go) and the store's machine drop what every other
// peer sends, where it would take effect; the gate counts and logs it with the peer's id and
// address, keeps the gossip topics from relaying it, and keeps the members' connections
// protected.

// openAdmissionWarning is what an open admission warns of, at start and in shardctl health.
const openAdmissionWarning = "any key holder can join as a member: this cluster has no authority (--cluster-authority), " +
	"so admission is open; fine for a local trial, see docs/security.md to admit only members with a credential"

// newGate checks this member's own credential against its policy and returns its gate; it
// registers the host's counts of unauthenticated connections with the member's metrics.
func newGate(cfg *Config, self peer.ID, host *p2p.Host, log *slog.Logger) (*trust.Gate, error) {
	if cfg.Trust.Admission() {
		if err := cfg.Trust.AdmitMember(time.Now(), self, cfg.Credential); err != nil {
			return nil, fmt.Errorf("this member could not join its cluster: %w (shardctl credential member --authority FILE --data-dir %s)", err, cfg.DataDir)
		}
	}
	if err := registerConnMetrics(cfg.Metrics, host); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return trust.NewGate(trust.GateConfig{
		Logger:     log.With("component", "trust"),
		Metrics:    cfg.Metrics,
		RemoteAddr: func(id peer.ID) string { return remoteAddr(host, id) },
		Changed: func(joined, gone []membership.Member) {
			for _, m := range joined {
				if info, ok := addrInfo(m); ok {
					host.KeepPeer(info)
				}
			}
			for _, m := range gone {
				if id, err := peer.Decode(string(m.Node)); err == nil {
					host.ForgetPeer(id)
				}
			}
		},
	})
}

// admitFunc is the membership machine's admission check (membership.Config.Admit): the
// policy's decision, with the refusal counted and logged by the gate.
func admitFunc(policy *trust.Policy, gate *trust.Gate) func(time.Time, membership.NodeID, []byte) string {
	return func(now time.Time, node membership.NodeID, credential []byte) string {
		id, err := peer.Decode(string(node))
		if err != nil {
			return fmt.Sprintf("%q is not a peer id", node)
		}
		if err := policy.AdmitMember(now, id, credential); err != nil {
			gate.JoinRefused(id, err)
			return err.Error()
		}
		return ""
	}
}

// Warnings are what is unsafe about how this member is set up, for shardctl health.
func (n *Node) Warnings() []string {
	var out []string
	if n.cfg.ClusterKey == nil && n.cfg.OpenMesh {
		out = append(out, "open mesh: no cluster key, and --open-mesh allows listening beyond loopback: "+
			"anyone who reaches this member can connect, join and read entity state")
	}
	if !n.cfg.Trust.Admission() {
		out = append(out, openAdmissionWarning)
	}
	return out
}

// remoteAddr returns the address host is connected to id from ("" when not connected).
func remoteAddr(host *p2p.Host, id peer.ID) string {
	for _, c := range host.LibP2P().Network().ConnsToPeer(id) {
		return c.RemoteMultiaddr().String()
	}
	return ""
}

// addrInfo returns a member's peer id and dialable addresses.
func addrInfo(m membership.Member) (peer.AddrInfo, bool) {
	id, err := peer.Decode(string(m.Node))
	if err != nil {
		return peer.AddrInfo{}, false
	}
	info := peer.AddrInfo{ID: id}
	for _, a := range m.Addrs {
		if ma, err := multiaddr.NewMultiaddr(a); err == nil {
			if t, _ := peer.SplitAddr(ma); t != nil {
				info.Addrs = append(info.Addrs, t)
			}
		}
	}
	return info, true
}

// Trust returns what this member trusts (never nil).
func (n *Node) Trust() *trust.Policy {
	if n.cfg.Trust == nil {
		return trust.NewPolicy(nil, nil)
	}
	return n.cfg.Trust
}

// registerConnMetrics exports the host's counts of inbound connections that did not get
// through their handshake (p2p.Stats).
func registerConnMetrics(reg prometheus.Registerer, host *p2p.Host) error {
	if reg == nil {
		return nil
	}
	refused := func(reason string, count func(p2p.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "shardmesh_p2p_inbound_refused_total",
			Help:        "Inbound connections closed before their handshake completed, by reason: limit (refused at once), handshake-failed, handshake-timeout.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(count(host.Stats())) })
	}
	for _, c := range []prometheus.Collector{
		refused("limit", func(s p2p.Stats) uint64 { return s.InboundRefused }),
		refused("handshake-failed", func(s p2p.Stats) uint64 { return s.HandshakesFailed }),
		refused("handshake-timeout", func(s p2p.Stats) uint64 { return s.HandshakesTimedOut }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shardmesh_p2p_unauthenticated_connections",
			Help: "Inbound connections in their handshake now (bounded by the resource manager).",
		}, func() float64 { return float64(host.Stats().Unauthenticated) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
