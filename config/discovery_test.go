package config

import (
	"strings"
	"testing"
	"time"
)

func TestJoinDNSKeys(t *testing.T) {
	c, err := Load(Sources{File: write(t, "c.yaml", `
listen: [/ip4/0.0.0.0/tcp/4001]
join-dns: shardmesh.default.svc.cluster.local
join-dns-server: 10.96.0.10:53
join-dns-interval: 500ms
`), Flags: []string{"join-dns-stable-margin=3s"}})
	if err != nil {
		t.Fatal(err)
	}
	j := c.Node.JoinDNS
	if j.Name != "shardmesh.default.svc.cluster.local" || j.Server != "10.96.0.10:53" || j.Interval != 500*time.Millisecond || j.StableMargin != 3*time.Second {
		t.Fatalf("JoinDNS = %+v", j)
	}
	if c.Node.ListenPort() != 4001 {
		t.Fatalf("ListenPort = %d, want 4001", c.Node.ListenPort())
	}
	if d := Default().Node.JoinDNS; d.Interval != 2*time.Second || d.StableMargin != 5*time.Second {
		t.Fatalf("defaults: %+v", d)
	}
}

func TestJoinDNSProblems(t *testing.T) {
	tests := []struct {
		flags []string
		want  string
	}{
		{[]string{"join-dns=members"}, `join-dns = "members" (flag): a name without a port needs a fixed listen port`},
		{[]string{"join-dns=members:0"}, `join-dns = "members:0" (flag): want NAME, NAME:PORT`},
		{[]string{"join-dns=_p2p._tcp.members:4001"}, "SRV name"},
		{[]string{"join-dns=members:4001", "join=/ip4/10.0.0.1/tcp/4001/p2p/12D3KooWGRUVh6QeF5kVtqLuXuVKE1FBGvmVnTaWBpvaqbxmMjqK"}, "join (flag) and join-dns (flag) are both set"},
		{[]string{"join-dns-interval=1ms"}, "join-dns-interval"},
		{[]string{"join-dns-stable-margin=0s"}, "join-dns-stable-margin"},
	}
	for _, tt := range tests {
		_, err := Load(Sources{Flags: tt.flags})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%v): %v, want an error containing %q", tt.flags, err, tt.want)
		}
	}
	// With a fixed listen port, or an SRV name, no port is needed in the name.
	for _, flags := range [][]string{{"join-dns=members", "listen=/ip4/0.0.0.0/tcp/4001"}, {"join-dns=_p2p._tcp.members"}} {
		if _, err := Load(Sources{Flags: flags}); err != nil {
			t.Errorf("Load(%v): %v", flags, err)
		}
	}
}
