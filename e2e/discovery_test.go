package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/internal/dnstest"
)

// formedLine is what a member logs when it forms a new cluster from DNS discovery.
const formedLine = `msg="forming a new cluster"`

// TestJoinDNSColdStartFormsOneCluster: three daemons start at once with nothing but a DNS
// name whose A records list them (a headless Service); they form one cluster, formed by
// exactly one of them. A fourth added to the records later joins it, and the member that
// formed the cluster, restarted, joins the running cluster instead of forming another.
func TestJoinDNSColdStartFormsOneCluster(t *testing.T) {
	dns := dnstest.Start(t)
	port := freePort(t, "127.0.0.2")
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	setMembers := func(n int) {
		var addrs []net.IP
		for _, ip := range ips[:n] {
			addrs = append(addrs, net.ParseIP(ip))
		}
		dns.SetHost("members.shardmesh.test", addrs...)
	}
	setMembers(3)
	c := newCluster(t, "--join-dns", "members.shardmesh.test", "--set", "join-dns-server="+dns.Addr(),
		"--set", "join-dns-interval=200ms", "--set", "join-dns-stable-margin=1s",
		"--set", "cluster.min-nr-of-members=3")
	listen := func(i int) string { return fmt.Sprintf("/ip4/%s/tcp/%d", ips[i], port) }

	var ds []*daemon
	for i := range 3 {
		ds = append(ds, c.spawn(fmt.Sprintf("m%d", i), "--listen", listen(i)))
	}
	if !waitFor(30*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("the 3 members found by DNS did not form one cluster of 3 Up members within 30s")
	}
	formers := 0
	var former *daemon
	for _, d := range ds {
		if strings.Contains(d.log.String(), formedLine) {
			formers++
			former = d
		}
	}
	if formers != 1 {
		t.Fatalf("%d members formed a cluster, want exactly 1", formers)
	}
	for _, d := range ds {
		if d != former && d.peerID() < former.peerID() {
			t.Errorf("%s formed the cluster, but %s has a lower peer id", former.peerID(), d.peerID())
		}
	}
	for _, l := range strings.Split(former.log.String(), "\n") {
		if strings.Contains(l, "discovery") || strings.Contains(l, "forming") {
			t.Log(l)
		}
	}
	if !strings.Contains(former.log.String(), "lowest peer id of the 3 found") {
		t.Errorf("the former's log does not say why it formed:\n%s", former.log.String())
	}

	// A fourth member appears in DNS later and joins the running cluster.
	setMembers(4)
	ds = append(ds, c.spawn("m3", "--listen", listen(3)))
	if !waitFor(30*time.Second, func() bool { return allAgree(ds, 4) }) {
		t.Fatal("a member added to DNS later did not join: 4 Up members expected")
	}
	if strings.Contains(ds[3].log.String(), formedLine) {
		t.Fatal("the member added later formed a cluster of its own")
	}

	// The member that formed the cluster leaves and comes back: the running cluster admits
	// it, so it joins instead of forming a second cluster.
	former.signal(syscall.SIGTERM)
	if code, ok := former.wait(60 * time.Second); !ok || code != 0 {
		t.Fatalf("the former did not leave cleanly: exit %d (exited: %v)", code, ok)
	}
	name := former.name
	idx := 0
	for i, d := range ds {
		if d == former {
			idx = i
		}
	}
	back := c.spawn(name, "--listen", listen(idx))
	ds[idx] = back
	if !waitFor(30*time.Second, func() bool { return allAgree(ds, 4) }) {
		t.Fatal("the restarted member did not rejoin the cluster of 4")
	}
	if strings.Contains(back.log.String(), formedLine) {
		t.Fatal("the restarted member formed a new cluster instead of joining the running one")
	}
}

// freePort returns a TCP port free on ip now (the kernel's pick): members of a StatefulSet
// share one port on different addresses, as these share it on different loopback
// addresses.
func freePort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s (loopback range 127.0.0.0/8 not routed here?): %v", ip, err)
	}
	defer ln.Close()
	p, _ := strconv.Atoi(strings.TrimPrefix(ln.Addr().String(), ip+":"))
	return p
}
