package e2e

import (
	"context"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/multiformats/go-multiaddr"

	"github.com/shardmesh/shardmesh/p2p"
)

// TestHostilePeerIsCutOffAndTheDaemonKeepsServing: a peer inside the mesh that announces a
// 100 MB frame, sends garbage, or sends a valid frame of nonsense has its stream reset (logged
// and counted) and the daemon goes on serving everyone, the same peer included.
func TestHostilePeerIsCutOffAndTheDaemonKeepsServing(t *testing.T) {
	c := newCluster(t)
	a := c.start("a")
	b := c.start("b", "--join", a.addr())
	if !waitFor(5*time.Second, func() bool { return allAgree([]*daemon{a, b}, 2) }) {
		t.Fatal("cluster did not form")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key, _, _ := crypto.GenerateEd25519Key(nil)
	evil, err := p2p.New(ctx, p2p.Config{Identity: key})
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	target, _ := multiaddr.NewMultiaddr(a.addr())
	id, err := evil.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	attacks := map[string][]byte{
		"100 MB frame":   binary.AppendUvarint(nil, 100<<20),
		"garbage":        []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01GET / HTTP/1.1"),
		"nonsense frame": p2p.AppendFrame(nil, []byte("this is not protobuf \x00\x01\x02")),
		"wrong version":  p2p.AppendFrame(nil, []byte{0x08, 0x63}), // MemberEnvelope{protocol_version: 99}
	}
	for _, proto := range []string{"/shardmesh/member/1", "/shardmesh/admin/1"} {
		for name, payload := range attacks {
			st, err := evil.LibP2P().NewStream(ctx, id, protocol.ID(proto))
			if err != nil {
				t.Fatalf("%s on %s: open: %v", name, proto, err)
			}
			// Writes fail once the daemon resets the stream; that is the point.
			_, _ = st.Write(payload)
			_, _ = st.Write(make([]byte, 64<<10)) // keep pushing: the daemon must not buffer toward 100 MB
			if err := st.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
				t.Fatal(err)
			}
			_, rerr := io.ReadAll(st)
			st.Close()
			if rerr == nil && proto == "/shardmesh/member/1" {
				t.Errorf("%s on %s: stream was not reset", name, proto)
			}
		}
	}
	// The daemon still serves: members answer, and the cluster view is intact.
	if v, ok := a.members(); !ok || v.count("Up") != 2 {
		t.Fatalf("daemon stopped serving after the attacks: ok=%v %+v", ok, v)
	}
	if !strings.Contains(a.log.String(), "stream reset") || !strings.Contains(a.log.String(), "oversized frame") {
		t.Errorf("the daemon did not log the resets:\n%s", a.log.String())
	}
	// The same peer, well-behaved now, is served too.
	cl, err := evil.OpenStream(ctx, id, "/shardmesh/admin/1")
	if err != nil {
		t.Fatalf("the daemon refuses the peer after the attack: %v", err)
	}
	cl.Close()
}
