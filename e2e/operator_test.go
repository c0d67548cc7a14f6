package e2e

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOperatorCLI drives the commands an on-call operator trips over, on three real
// daemons: flags after the arguments and "--", messages the entity type refuses, ask
// timeouts, shard ids, unpin, drained and Removed members in members and down.
func TestOperatorCLI(t *testing.T) {
	keys := t.TempDir()
	adminKey, adminID := keygenAdmin(t, keys, "admin.key")
	c := newCluster(t, append(adminFlags(adminID), "--set", "cluster.split-brain-resolver.stable-after=1s")...)
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	m2, m3 := ds[1], ds[2]
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	at := func(d *daemon, args ...string) []string {
		return append([]string{args[0], "--data-dir", d.dir, "--identity", adminKey}, args[1:]...)
	}

	rs := ctlAll(
		at(m1, "ask", "echo", "--", "-x", "hello"),                              // 0: -- ends the flags
		[]string{"ask", "counter", "u1", "inc", "--data-dir", m1.dir, "--json"}, // 1: flags after the arguments
		at(m1, "tell", "counter", "x", "frobnicate"),                            // 2: refused by the type's codec
		at(m1, "ask", "--timeout", "11m", "counter", "x", "get"),                // 3: beyond the longest ask
		at(m1, "region-state", "--ids", "-3"),                                   // 4: was a panic
		at(m1, "shard", "move", "counter", "abc", m2.peerID()),                  // 5: not a shard id of the type
		at(m1, "shard", "pin", "counter", "30", m2.peerID()),                    // 6: out of range (30 shards: 0-29)
		at(m1, "shard", "unpin", "counter", "3"),                                // 7: not pinned
		at(m1, "tell", "counter", "x", "inc", "99999999999999999999"),           // 8: not an int64
	)
	if r := rs[0]; r.code != 0 || !strings.HasPrefix(r.out, "hello (entity -x,") {
		t.Errorf("ask echo -- -x hello:\n%v", r)
	}
	if r := rs[1]; r.code != 0 || !strings.Contains(r.out, `"reply": 1`) {
		t.Errorf("flags after the arguments:\n%v", r)
	}
	for i, want := range map[int]string{2: `unknown command "frobnicate"`, 3: "at most 10m0s", 4: "--ids -3", 5: `shard "abc": not a shard`, 6: "0 to 29", 8: "not a 64-bit integer"} {
		if r := rs[i]; r.code != 2 || !strings.Contains(r.err, want) || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
			t.Errorf("want exit 2 and one line with %q:\n%v", want, r)
		}
	}
	if r := rs[7]; r.code != 4 || !strings.Contains(r.err, "not pinned") {
		t.Errorf("unpin of a shard not pinned:\n%v", r)
	}
	if r := rs[5]; strings.Contains(r.out, "moving") {
		t.Errorf("a bad shard id was waited for:\n%v", r)
	}

	// A drained member is marked, in the table and in JSON.
	if r := ctlAll(at(m1, "drain", "--no-wait", m2.peerID()))[0]; r.code != 0 {
		t.Fatalf("drain:\n%v", r)
	}
	rs = ctlAll(at(m1, "members"), at(m1, "members", "--json"))
	if !strings.Contains(lineOf(rs[0].out, m2.peerID()[len(m2.peerID())-8:]), "drained") {
		t.Errorf("members does not mark the drained member:\n%s", rs[0].out)
	}
	if m := memberJSON(t, rs[1], m2.peerID()); m["draining"] != true {
		t.Errorf("members --json: draining of the drained member is %v", m["draining"])
	}

	// kill -9 m3: unreachable (reachable: false, not left out of the JSON), then Removed:
	// REACHABLE "-", and down says it is Removed already rather than "unknown member".
	m3id := m3.peerID()
	m3.signal(syscall.SIGKILL)
	<-m3.exited
	var removed bool
	sawUnreachable := false
	if !waitFor(30*time.Second, func() bool {
		r := ctlAll(at(m1, "members", "--json"))[0]
		if r.code != 0 {
			return false
		}
		m := memberJSON(t, r, m3id)
		if reach, ok := m["reachable"]; !ok {
			t.Fatalf("members --json leaves reachable out:\n%s", r.out)
		} else if reach == false && m["status"] != "Removed" {
			sawUnreachable = true
		}
		removed = m["status"] == "Removed"
		return removed
	}) {
		t.Fatal("m3 was not Removed within 30 s")
	}
	if !sawUnreachable {
		t.Log("m3 went from reachable to Removed between two polls")
	}
	rs = ctlAll(at(m1, "members"), at(m1, "down", "--yes", m3id[len(m3id)-8:]), at(m1, "leave", m3id))
	if line := lineOf(rs[0].out, m3id[len(m3id)-8:]); !strings.Contains(line, "Removed") || strings.Contains(line, "yes") {
		t.Errorf("a Removed member's row: %q\n%s", line, rs[0].out)
	}
	if r := rs[1]; r.code != 0 || !strings.Contains(r.out, "is Removed already") {
		t.Errorf("down of a Removed member:\n%v", r)
	}
	if r := rs[2]; r.code != 2 || !strings.Contains(r.err, "was Removed from the cluster") {
		t.Errorf("leave of a Removed member:\n%v", r)
	}
}

// memberJSON returns member id's object in members --json, as decoded JSON.
func memberJSON(t *testing.T, r run, id string) map[string]any {
	t.Helper()
	v := decode[struct {
		Members []map[string]any `json:"members"`
	}](t, r)
	for _, m := range v.Members {
		if m["node"] == id {
			return m
		}
	}
	t.Fatalf("%s not in members --json:\n%s", id, r.out)
	return nil
}

// lineOf returns the first line of out containing s.
func lineOf(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestConnectionErrors: what shardctl says when it cannot talk to a member names the cause
// first: a member that hangs after accepting the connection fails at --timeout (not at
// libp2p's 5 s) and is not blamed on the key; an address whose peer id is another member's
// says so; a different cluster key points at --cluster-key.
func TestConnectionErrors(t *testing.T) {
	keys := t.TempDir()
	if _, e, code := shardctl("keygen", "--out", keys+"/a.key"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := shardctl("keygen", "--out", keys+"/b.key"); code != 0 {
		t.Fatal(e)
	}
	c := newCluster(t, "--cluster-key", keys+"/a.key")
	m1 := c.start("m1")
	other := c.start("other").peerID() // a real peer id, of another member

	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	go func() {
		var held []net.Conn // accepted and never answered
		for {
			conn, err := hung.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, conn)
		}
	}()
	port := hung.Addr().(*net.TCPAddr).Port
	addr := m1.addr()
	wrongID := addr[:strings.LastIndex(addr, "/")+1] + other

	start := time.Now()
	rs := ctlAll(
		[]string{"members", "--node", "/ip4/127.0.0.1/tcp/" + strconv.Itoa(port) + "/p2p/" + other, "--timeout", "7s", "--cluster-key", keys + "/a.key"},
		[]string{"members", "--node", wrongID, "--cluster-key", keys + "/a.key"},
		[]string{"members", "--node", addr, "--cluster-key", keys + "/b.key", "--timeout", "3s"},
	)
	if r := rs[0]; r.code != 1 || !strings.HasPrefix(r.err, "shardctl: cannot reach") || !strings.Contains(r.err, "within --timeout: it accepted the connection but did not complete the handshake: the member is hung") {
		t.Errorf("a hung member:\n%v", r)
	}
	if took := time.Since(start); took < 6500*time.Millisecond {
		t.Errorf("a hung member failed after %v, before --timeout 7s", took)
	}
	if r := rs[1]; r.code != 1 || !strings.HasPrefix(r.err, "shardctl: peer id mismatch") {
		t.Errorf("an address with another member's id:\n%v", r)
	}
	// Another key fails at once, or (as the member reads our bytes as garbage and waits for
	// more) like a member that hangs: either way the message names the key.
	if r := rs[2]; r.code != 1 || !strings.Contains(r.err, "check --cluster-key") && !strings.Contains(r.err, "its --cluster-key is not this one") {
		t.Errorf("another cluster key:\n%v", r)
	}
}
