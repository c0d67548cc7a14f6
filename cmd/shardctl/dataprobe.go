package main

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

// probeTarget is an address where a member of the cluster may answer, and where it came
// from (a data directory's addrs file, or --node).
type probeTarget struct {
	addr, from string
}

// probeAnswer is a target where something answered.
type probeAnswer struct {
	probeTarget
	member string // the peer id that answered the admin protocol's dial; "" when only TCP did
	err    error  // why the libp2p dial failed although TCP answered
}

func (a probeAnswer) String() string {
	if a.member != "" {
		return fmt.Sprintf("member %s answers at %s (from %s)", a.member, a.addr, a.from)
	}
	return fmt.Sprintf("something accepts connections at %s (from %s) but the libp2p handshake failed (%v): a member with a cluster key (pass --cluster-key), or a stale address another program took (delete the addrs file)", a.addr, a.from, a.err)
}

// probeTargets lists the addresses to try: every address in the directories' addrs files
// (left behind by a daemon that did not exit cleanly, or written by one that runs) and
// every --node address, each once.
func probeTargets(dirs []*stoppedDir, nodes []string) []probeTarget {
	var out []probeTarget
	seen := map[string]bool{}
	add := func(addr, from string) {
		if !seen[addr] {
			seen[addr] = true
			out = append(out, probeTarget{addr: addr, from: from})
		}
	}
	for _, d := range dirs {
		for _, a := range d.addrs {
			add(a, d.path+"/addrs")
		}
	}
	for _, n := range nodes {
		add(n, "--node")
	}
	return out
}

// probe tries every target at once, each for at most timeout, and returns those where
// something answered. An address where nothing accepts a TCP connection (or that does not
// answer within timeout) does not count.
func probe(targets []probeTarget, psk pnet.PSK, timeout time.Duration) []probeAnswer {
	var mu sync.Mutex
	var out []probeAnswer
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a, ok := probeOne(t, psk, timeout); ok {
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

func probeOne(t probeTarget, psk pnet.PSK, timeout time.Duration) (probeAnswer, bool) {
	a := probeAnswer{probeTarget: t}
	ma, err := multiaddr.NewMultiaddr(t.addr)
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
	cl, err := admin.Dial(ctx, admin.ClientConfig{Node: t.addr, ClusterKey: psk})
	if err != nil {
		if !tcpAnswered {
			return a, false // not TCP (QUIC, …): a failed dial cannot tell silence from refusal
		}
		a.err = err
		return a, true
	}
	a.member = cl.Node().String()
	_ = cl.Close()
	return a, true
}
