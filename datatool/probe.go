package datatool

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/shardmesh/shardmesh/admin"
)

// ProbeTarget is an address where a member of the cluster may answer, and where it came
// from (a data directory's addrs file, or --node).
type ProbeTarget struct {
	Addr, From string
}

// ProbeAnswer is a target where something answered.
type ProbeAnswer struct {
	ProbeTarget
	Member string // the peer id that answered the admin protocol's dial; "" when only TCP did
	Err    error  // why the libp2p dial failed although TCP answered
}

func (a ProbeAnswer) String() string {
	if a.Member != "" {
		return fmt.Sprintf("member %s answers at %s (from %s)", a.Member, a.Addr, a.From)
	}
	return fmt.Sprintf("something accepts connections at %s (from %s) but the libp2p handshake failed (%v): a member with a cluster key (pass --cluster-key), or a stale address another program took (delete the addrs file)", a.Addr, a.From, a.Err)
}

// ProbeTargets lists the addresses to try: every address in the directories' addrs files
// (left behind by a daemon that did not exit cleanly, or written by one that runs) and
// every --node address, each once.
func ProbeTargets(dirs []*Dir, nodes []string) []ProbeTarget {
	var out []ProbeTarget
	seen := map[string]bool{}
	add := func(addr, from string) {
		if !seen[addr] {
			seen[addr] = true
			out = append(out, ProbeTarget{Addr: addr, From: from})
		}
	}
	for _, d := range dirs {
		for _, a := range d.Addrs {
			add(a, d.Path+"/addrs")
		}
	}
	for _, n := range nodes {
		add(n, "--node")
	}
	return out
}

// Probe tries every target at once, each for at most timeout, and returns those where
// something answered. An address where nothing accepts a TCP connection (or that does not
// answer within timeout) does not count.
func Probe(targets []ProbeTarget, psk pnet.PSK, timeout time.Duration) []ProbeAnswer {
	var mu sync.Mutex
	var out []ProbeAnswer
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			if a, ok := probeOne(t, psk, timeout); ok {
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

func probeOne(t ProbeTarget, psk pnet.PSK, timeout time.Duration) (ProbeAnswer, bool) {
	a := ProbeAnswer{ProbeTarget: t}
	ma, err := multiaddr.NewMultiaddr(t.Addr)
	if err != nil {
		return a, false // checked earlier for --node; a garbled addrs line names nothing
	}
	transport, _ := peer.SplitAddr(ma)
	if transport == nil {
		transport = ma
	}
	tcpAnswered := false
	if na, err := manet.ToNetAddr(transport); err == nil && strings.HasPrefix(na.Network(), "tcp") {
		conn, err := net.DialTimeout(na.Network(), na.String(), timeout)
		if err != nil {
			return a, false // nothing listens there
		}
		conn.Close()
		tcpAnswered = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl, err := admin.Dial(ctx, admin.ClientConfig{Node: t.Addr, ClusterKey: psk})
	if err != nil {
		if !tcpAnswered {
			return a, false // not TCP (QUIC, …): a failed dial cannot tell silence from refusal
		}
		a.Err = err
		return a, true
	}
	a.Member = cl.Node().String()
	_ = cl.Close()
	return a, true
}
