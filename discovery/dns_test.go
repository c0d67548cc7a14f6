package discovery

import (
	"context"
	"crypto/rand"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/shardmesh/shardmesh/internal/dnstest"
	"github.com/shardmesh/shardmesh/internal/testlog"
	"github.com/shardmesh/shardmesh/p2p"
)

// fakeMember stands for a member's membership machine: it has joined once it formed a
// cluster or asked a member that had.
type fakeMember struct {
	host *p2p.Host
	mu   sync.Mutex
	form bool
	via  []peer.ID
}

func (m *fakeMember) formed() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.form }

func newTestHost(t *testing.T) *p2p.Host {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := p2p.New(t.Context(), p2p.Config{Identity: key, Logger: testlog.New(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// TestDNSColdStartOneFormer: three members start at once behind one SRV name; exactly the
// one with the lowest peer id forms, and the others ask it (and each other) to admit them.
func TestDNSColdStartOneFormer(t *testing.T) {
	dns := dnstest.Start(t)
	members := map[peer.ID]*fakeMember{}
	var targets []string
	for i := range 3 {
		h := newTestHost(t)
		members[h.ID()] = &fakeMember{host: h}
		transport, _ := peer.SplitAddr(h.Addrs()[0])
		na, err := manet.ToNetAddr(transport)
		if err != nil {
			t.Fatal(err)
		}
		name := "m" + strconv.Itoa(i) + ".members.test"
		dns.SetHost(name, net.ParseIP("127.0.0.1"))
		targets = append(targets, name+":"+strconv.Itoa(na.(*net.TCPAddr).Port))
	}
	dns.SetSRV("_p2p._tcp.members.test", targets...)
	ids := make([]peer.ID, 0, 3)
	for id := range members {
		ids = append(ids, id)
	}
	slices.Sort(ids)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range members {
		joined := func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.form {
				return true
			}
			for _, id := range m.via {
				if members[id].formed() {
					return true
				}
			}
			return false
		}
		d, err := NewDNS(Config{Name: Name{Host: "_p2p._tcp.members.test", SRV: true}, Server: dns.Addr(),
			Interval: 20 * time.Millisecond, StableMargin: 100 * time.Millisecond, MinMembers: 3, Logger: testlog.New(t, 0)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			d.Run(ctx, m.host, joined,
				func(id peer.ID) { m.mu.Lock(); m.via = append(m.via, id); m.mu.Unlock() },
				func(string) { m.mu.Lock(); m.form = true; m.mu.Unlock() })
		})
	}
	wg.Wait() // every Run returns once its member has joined
	if ctx.Err() != nil {
		t.Fatal("the members did not all join within 30s")
	}
	for id, m := range members {
		if m.formed() != (id == ids[0]) {
			t.Errorf("%s formed=%v; only the lowest peer id %s may form", id, m.formed(), ids[0])
		}
		if id != ids[0] && !slices.Contains(m.via, ids[0]) {
			t.Errorf("%s never asked %s, the member that formed: asked %v", id, ids[0], m.via)
		}
		if slices.Contains(m.via, id) {
			t.Errorf("%s asked itself to admit it", id)
		}
	}
}
