package e2e

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// rssBytes returns the resident set size of d's process.
func (d *daemon) rssBytes() int64 {
	d.t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				d.t.Fatal(err)
			}
			return kb << 10
		}
	}
	d.t.Fatalf("no VmRSS for %s", d.name)
	return 0
}

// tcpAddr returns the TCP address d listens on.
func (d *daemon) tcpAddr() string {
	d.t.Helper()
	ma, err := multiaddr.NewMultiaddr(d.addr())
	if err != nil {
		d.t.Fatal(err)
	}
	transport, _ := multiaddr.SplitFunc(ma, func(c multiaddr.Component) bool { return c.Protocol().Code == multiaddr.P_P2P })
	na, err := manet.ToNetAddr(transport)
	if err != nil {
		d.t.Fatal(err)
	}
	return na.String()
}

// flood holds connections to a daemon that never complete the handshake: idle ones that
// send nothing and half-open ones that send the first bytes of a handshake and stall. Each
// slot dials from its own loopback source address (127.0.0.2 and up, several slots per
// address: an attacker's many hosts), holds the connection until the daemon closes it,
// and dials again a moment later, until stop.
type flood struct {
	stopped   atomic.Bool
	wg        sync.WaitGroup
	firstDone sync.WaitGroup // every slot has had its first connection answered or refused
	dialed    atomic.Int64   // connections the kernel accepted
	failed    atomic.Int64   // dials that failed
	closed    atomic.Int64   // connections the daemon closed
}

func startFlood(target string, idle, halfOpen, perSource int) *flood {
	f := &flood{}
	slots := idle + halfOpen
	f.firstDone.Add(slots)
	for i := range slots {
		src := &net.TCPAddr{IP: net.IPv4(127, 0, byte(1+i/perSource/250), byte(2+(i/perSource)%250))}
		f.wg.Add(1)
		go f.slot(target, src, i >= idle)
	}
	return f
}

func (f *flood) slot(target string, src *net.TCPAddr, halfOpen bool) {
	defer f.wg.Done()
	first := true
	for !f.stopped.Load() {
		d := net.Dialer{LocalAddr: src, Timeout: 5 * time.Second}
		conn, err := d.Dial("tcp", target)
		if err != nil {
			f.failed.Add(1)
		} else {
			f.dialed.Add(1)
			if halfOpen {
				nonce := make([]byte, 10) // the private network's nonce is 24 bytes
				_, _ = rand.Read(nonce)
				_, _ = conn.Write(nonce)
			}
			// Wait for the daemon to close it (or for stop).
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
			buf := make([]byte, 64)
			for !f.stopped.Load() {
				if _, err := conn.Read(buf); err != nil {
					if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
						f.closed.Add(1)
					}
					break
				}
			}
			conn.Close()
		}
		if first {
			first = false
			f.firstDone.Done()
		}
		if !f.stopped.Load() {
			time.Sleep(250 * time.Millisecond) // the attacker's pace, not a synchronisation
		}
	}
}

func (f *flood) stop() {
	f.stopped.Store(true)
	f.wg.Wait()
}

// TestConnectionFloodKeepsMembersAndShardctl: 500 idle and 500 half-open connections to one
// member, from 250 addresses, held and renewed for as long as the test checks. The
// unauthenticated connections the member holds stay bounded, handshakes that do not
// complete are cut off, and meanwhile the members stay Up and reachable (no member event
// in a watch), asks through the flooded member succeed, and its RSS stays bounded.
func TestConnectionFloodKeepsMembersAndShardctl(t *testing.T) {
	key := keygenCluster(t, t.TempDir())
	c := newCluster(t, "--cluster-key", key, "--entity-types", "counter", "--metrics-listen", "127.0.0.1:0")
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	askCounters(t, m1, ids(20), "inc")
	baseline := m1.rssBytes()
	watch := startCtl(t, m1.ctl("watch", "--json")...)
	if !waitFor(10*time.Second, func() bool { return strings.Contains(watch.err.String(), "watching") }) {
		t.Fatalf("watch did not start:\n%s", watch.err.String())
	}

	f := startFlood(m1.tcpAddr(), 500, 500, 4)
	defer f.stop()
	f.firstDone.Wait()
	t.Logf("flood: every slot dialed once: %d connections accepted by the kernel, %d dials failed, %d closed by the member so far",
		f.dialed.Load(), f.failed.Load(), f.closed.Load())

	// While the flood goes on: asks through the flooded member, and the members' views.
	var maxUnauth float64
	for i := range 20 {
		start := time.Now()
		r := ctlAll(m1.ctl("ask", "counter", "counter-"+strconv.Itoa(i), "inc"))[0]
		if r.code != 0 {
			t.Fatalf("ask %d during the flood: %v", i, r)
		}
		if i%5 == 0 {
			t.Logf("ask during the flood: %v", time.Since(start).Round(time.Millisecond))
		}
		maxUnauth = max(maxUnauth, m1.scrapeMetrics().value("shardmesh_p2p_unauthenticated_connections"))
	}
	for _, d := range ds {
		v, ok := d.members()
		if !ok || v.count("Up") != 3 {
			t.Fatalf("%s during the flood: ok=%v %+v", d.name, ok, v)
		}
		for _, m := range v.Members {
			if !m.Reachable {
				t.Errorf("%s sees %s unreachable during the flood", d.name, m.Node)
			}
		}
	}
	rss := m1.rssBytes()
	t.Logf("RSS of the flooded member: %d MiB before, %d MiB during; at most %.0f unauthenticated connections held",
		baseline>>20, rss>>20, maxUnauth)
	if rss-baseline > 128<<20 {
		t.Errorf("RSS grew by %d MiB during the flood", (rss-baseline)>>20)
	}
	s := m1.scrapeMetrics()
	refused, timedOut := s.value("shardmesh_p2p_inbound_refused_total", "reason", "limit"), s.value("shardmesh_p2p_inbound_refused_total", "reason", "handshake-timeout")
	t.Logf("refused at once: %.0f; handshakes timed out: %.0f", refused, timedOut)
	if refused == 0 || timedOut == 0 {
		t.Errorf("the flooded member refused %.0f connections and timed out %.0f handshakes", refused, timedOut)
	}
	if maxUnauth == 0 || maxUnauth > 512 {
		t.Errorf("the flooded member held %.0f unauthenticated connections", maxUnauth)
	}
	// Every connection the member took is closed by it (the handshake timeout), not held.
	closedBefore := f.closed.Load()
	if !waitFor(30*time.Second, func() bool { return f.closed.Load() >= closedBefore+100 }) {
		t.Errorf("the member does not close connections that never complete the handshake")
	}
	f.stop()

	if out := watch.out.String(); strings.Contains(out, "member-unreachable") || strings.Contains(out, "member-down") {
		t.Errorf("members became unreachable during the flood:\n%s", out)
	}
	lines := strings.Count(m1.log.String(), "\n")
	t.Logf("the flooded member wrote %d log lines", lines)
	if strings.Count(m1.log.String(), "127.0.0.") == 0 {
		t.Errorf("the flooded member did not log the connections it refused")
	}
	if lines > 400 {
		t.Errorf("the flooded member wrote %d log lines: refusals are not rate-limited", lines)
	}
}

// TestOpenMeshIsRefused: a daemon listening on a non-loopback address without a cluster key
// refuses to start (exit 2, saying what to do), unless --open-mesh says the operator wants
// an open mesh, which it then warns of.
func TestOpenMeshIsRefused(t *testing.T) {
	c := newCluster(t)
	d := c.spawn("open", "--listen", "/ip4/0.0.0.0/tcp/0")
	if code, ok := d.wait(20 * time.Second); !ok || code != 2 {
		t.Fatalf("exited=%v code=%d, want 2:\n%s", ok, code, d.log.String())
	}
	for _, want := range []string{"0.0.0.0", "--cluster-key", "--open-mesh"} {
		if !strings.Contains(d.log.String(), want) {
			t.Errorf("the refusal does not mention %s:\n%s", want, d.log.String())
		}
	}
	d = c.start("open", "--listen", "/ip4/0.0.0.0/tcp/0", "--open-mesh=on")
	if !waitFor(10*time.Second, func() bool { return strings.Contains(d.log.String(), "level=WARN msg=\"open mesh") }) {
		t.Errorf("an open mesh on purpose is not warned of:\n%s", d.log.String())
	}
	key := keygenCluster(t, t.TempDir())
	c.start("keyed", "--listen", "/ip4/0.0.0.0/tcp/0", "--cluster-key", key)
}

// TestHandshakeErrorsSayWhatHappened: shardctl says which of the causes of a failed
// connection it was: another cluster key (and the member logs the handshake that failed, or
// stalled on the garbage the other key makes of the bytes, with the address it came from),
// an address whose /p2p/ id is another member's, or a handshake that did not complete in
// time.
func TestHandshakeErrorsSayWhatHappened(t *testing.T) {
	keys := t.TempDir()
	key := keygenCluster(t, keys)
	other := keygenCluster(t, t.TempDir())
	c := newCluster(t, "--cluster-key", key)
	m1 := c.start("m1")
	m2 := c.start("m2", "--join", m1.addr())
	if !waitFor(15*time.Second, func() bool { return allAgree([]*daemon{m1, m2}, 2) }) {
		t.Fatal("cluster did not form")
	}
	r := ctlAll([]string{"members", "--node", m1.addr(), "--cluster-key", other})[0]
	if r.code != 1 || !strings.Contains(r.err, "cluster key") || strings.Contains(r.err, "timeout") {
		t.Errorf("another cluster key:\n%v", r)
	}
	if !waitFor(10*time.Second, func() bool {
		log := m1.log.String()
		return strings.Contains(log, "inbound handshake") && strings.Contains(log, "/ip4/127.0.0.1/")
	}) {
		t.Errorf("m1 did not log the failed handshake with its address:\n%s", m1.log.String())
	}

	wrongID := strings.Replace(m1.addr(), m1.peerID(), m2.peerID(), 1)
	r = ctlAll([]string{"members", "--node", wrongID, "--cluster-key", key})[0]
	if r.code != 1 || !strings.HasPrefix(strings.TrimPrefix(r.err, "shardctl: "), "peer id mismatch") {
		t.Errorf("an address with another member's peer id:\n%v", r)
	}

	// Something that accepts connections and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	silent := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", l.Addr().(*net.TCPAddr).Port, m1.peerID())
	r = ctlAll([]string{"members", "--node", silent, "--cluster-key", key, "--timeout", "2s"})[0]
	if r.code != 1 || !strings.Contains(r.err, "did not complete the handshake") || strings.Contains(r.err, "cluster key") {
		t.Errorf("a silent peer:\n%v", r)
	}
}
