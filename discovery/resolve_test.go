package discovery

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/shardmesh/shardmesh/internal/dnstest"
)

func TestParseName(t *testing.T) {
	good := map[string]Name{
		"shardmesh.default.svc.cluster.local": {Host: "shardmesh.default.svc.cluster.local"},
		"members.example:4001":                {Host: "members.example", Port: 4001},
		"_p2p._tcp.shardmesh.default.svc":     {Host: "_p2p._tcp.shardmesh.default.svc", SRV: true},
		" members ":                           {Host: "members"},
		"[fd00::1]:4001":                      {Host: "fd00::1", Port: 4001},
	}
	for in, want := range good {
		if got, err := ParseName(in); err != nil || got != want {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "members:0", "members:70000", "members:x", ":4001", "_p2p._tcp.x:4001"} {
		if _, err := ParseName(bad); err == nil {
			t.Errorf("ParseName(%q) accepted", bad)
		}
	}
}

func TestResolverLookup(t *testing.T) {
	dns := dnstest.Start(t)
	dns.SetHost("members.test", net.ParseIP("127.0.0.3"), net.ParseIP("127.0.0.2"), net.ParseIP("::1"))
	dns.SetHost("a.members.test", net.ParseIP("127.0.0.5"))
	dns.SetHost("b.members.test", net.ParseIP("127.0.0.6"))
	dns.SetSRV("_p2p._tcp.members.test", "a.members.test:4101", "b.members.test:4102", "gone.members.test:4103")

	lookup := func(name string, port int) []string {
		t.Helper()
		n, err := ParseName(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewResolver(n, port, dns.Addr())
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Lookup(t.Context())
		if err != nil {
			t.Fatalf("Lookup(%s): %v", name, err)
		}
		return got
	}
	if got, want := lookup("members.test", 4001), []string{"127.0.0.2:4001", "127.0.0.3:4001", "[::1]:4001"}; !slices.Equal(got, want) {
		t.Errorf("A/AAAA: %v, want %v", got, want)
	}
	if got, want := lookup("members.test:4009", 4001), []string{"127.0.0.2:4009", "127.0.0.3:4009", "[::1]:4009"}; !slices.Equal(got, want) {
		t.Errorf("A/AAAA with a port: %v, want %v", got, want)
	}
	if got, want := lookup("_p2p._tcp.members.test", 0), []string{"127.0.0.5:4101", "127.0.0.6:4102"}; !slices.Equal(got, want) {
		t.Errorf("SRV: %v, want %v (a target that does not resolve is left out)", got, want)
	}
	if got := lookup("nobody.test", 4001); len(got) != 0 {
		t.Errorf("a name that does not exist: %v, want none", got)
	}
	// The records change while a member waits: the next lookup sees the change.
	dns.SetHost("members.test", net.ParseIP("127.0.0.7"))
	if got, want := lookup("members.test", 4001), []string{"127.0.0.7:4001"}; !slices.Equal(got, want) {
		t.Errorf("after a change: %v, want %v", got, want)
	}
	if dns.Asked("members.test") == 0 {
		t.Error("the lookups did not reach the test's server")
	}
}

func TestResolverErrors(t *testing.T) {
	if _, err := NewResolver(Name{Host: "members"}, 0, ""); err == nil || !strings.Contains(err.Error(), "members:PORT") {
		t.Errorf("no port anywhere: %v, want an error that says to write members:PORT", err)
	}
	if _, err := NewResolver(Name{Host: "members"}, 4001, "10.0.0.1"); err == nil || !strings.Contains(err.Error(), "join-dns-server") {
		t.Errorf("a server without a port: %v", err)
	}
	// A server that does not answer is an error, not "no members".
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	r, err := NewResolver(Name{Host: "members.test"}, 4001, addr)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Lookup(t.Context()); err == nil {
		t.Errorf("lookup at a closed server: %v, want an error", got)
	}
}
