package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startFive starts a seed and four members joining through it, and returns them with the
// time the last one started.
func startFive(c *cluster) ([]*daemon, time.Time) {
	seed := c.start("m1")
	ds := []*daemon{seed}
	for i := 2; i <= 5; i++ {
		ds = append(ds, c.spawn(fmt.Sprintf("m%d", i), "--join", seed.addr()))
	}
	last := time.Now()
	return ds, last
}

// allAgree reports whether every daemon in ds answers with want Up members and the same oldest.
func allAgree(ds []*daemon, want int) bool {
	oldest := ""
	for _, d := range ds {
		v, ok := d.members()
		if !ok || v.count("Up") != want || len(v.Members) != want {
			return false
		}
		if oldest == "" {
			oldest = v.Oldest
		}
		if v.Oldest != oldest || oldest == "" {
			return false
		}
	}
	return true
}

func TestFiveMembersJoinThroughOneSeed(t *testing.T) {
	c := newCluster(t)
	ds, last := startFive(c)
	if !waitFor(3*time.Second, func() bool { return allAgree(ds, 5) }) {
		t.Fatalf("5 members did not agree on 5 Up members and the oldest within 3 s of the last start")
	}
	t.Logf("all 5 agree %v after the last start", time.Since(last).Round(time.Millisecond))
	v, _ := ds[3].members()
	if v.Oldest != ds[0].peerID() {
		t.Errorf("oldest is %s, want the seed %s", v.Oldest, ds[0].peerID())
	}
	// Convergence is per member and can lag a gossip round behind allAgree's reading.
	var out string
	var code int
	waitFor(3*time.Second, func() bool {
		out, _, code = shardctl("members", "--data-dir", ds[2].dir)
		return code == 0 && strings.Contains(out, "5 members, 5 up; view converged")
	})
	if code != 0 || !strings.Contains(out, "oldest") || !strings.Contains(out, "5 members, 5 up; view converged") {
		t.Errorf("members table (exit %d):\n%s", code, out)
	}
}

func TestKilledMemberIsDownedAndRemoved(t *testing.T) {
	c := newCluster(t, "--set", "cluster.split-brain-resolver.stable-after=2s")
	ds, _ := startFive(c)
	if !waitFor(5*time.Second, func() bool { return allAgree(ds, 5) }) {
		t.Fatal("cluster did not form")
	}
	// Let the failure detectors learn the heartbeat rhythm: the first estimate (1 s ± 250 ms)
	// weighs on the deviation until a few seconds of real heartbeats have come in.
	time.Sleep(10 * time.Second)
	victim := ds[4]
	id := victim.peerID()
	victim.kill()
	killed := time.Now()
	rest := ds[:4]
	unreachable := func() bool {
		return everyone(rest, func(v membersView) bool { return !v.reachable(id) })
	}
	if !waitFor(5*time.Second, unreachable) {
		t.Fatalf("the others did not mark the killed member unreachable within 5 s")
	}
	t.Logf("unreachable everywhere %v after kill -9", time.Since(killed).Round(time.Millisecond))
	removed := func() bool {
		return everyone(rest, func(v membersView) bool { return v.status(id) == "Removed" })
	}
	// detection (< 5 s) + stable-after (2 s) + the downed member's lease (acceptable pause
	// 3 s + a heartbeat interval), which is longer than this test's down-removal-margin (2 s)
	if !waitFor(14*time.Second, removed) {
		t.Fatal("the killed member was not downed and removed")
	}
	t.Logf("downed and removed everywhere %v after kill -9", time.Since(killed).Round(time.Millisecond))
	if !waitFor(3*time.Second, func() bool { return allAgreeUp(rest, 4) }) {
		t.Fatal("the four survivors do not agree")
	}
}

// allAgreeUp is allAgree counting only Up members (the removed one stays as a tombstone).
func allAgreeUp(ds []*daemon, want int) bool {
	oldest := ""
	for _, d := range ds {
		v, ok := d.members()
		if !ok || v.count("Up") != want {
			return false
		}
		if oldest == "" {
			oldest = v.Oldest
		}
		if v.Oldest != oldest {
			return false
		}
	}
	return true
}

func TestSigtermLeavesGracefully(t *testing.T) {
	c := newCluster(t)
	ds, _ := startFive(c)
	if !waitFor(5*time.Second, func() bool { return allAgree(ds, 5) }) {
		t.Fatal("cluster did not form")
	}
	leaver := ds[2]
	id := leaver.peerID()
	leaver.signal(syscall.SIGTERM)
	sent := time.Now()
	rest := []*daemon{ds[0], ds[1], ds[3], ds[4]}
	if !waitFor(2*time.Second, func() bool {
		for _, d := range rest {
			if v, ok := d.members(); !ok || v.status(id) != "Removed" {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the others did not list the leaving member Removed within 2 s")
	}
	t.Logf("Removed everywhere %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	code, exited := leaver.wait(5 * time.Second)
	if !exited || code != 0 {
		t.Fatalf("leaving daemon: exited=%v code=%d", exited, code)
	}
	if !strings.Contains(leaver.log.String(), "left the cluster") {
		t.Errorf("log lacks the leave:\n%s", leaver.log.String())
	}
}

func TestDifferentClusterKeyCannotJoin(t *testing.T) {
	dir := t.TempDir()
	keyA, keyB := filepath.Join(dir, "a.key"), filepath.Join(dir, "b.key")
	for _, k := range []string{keyA, keyB} {
		if _, errOut, code := shardctl("keygen", "--out", k); code != 0 {
			t.Fatalf("keygen: %s", errOut)
		}
	}
	c := newCluster(t)
	seed := c.start("seed", "--cluster-key", keyA)
	friend := c.start("friend", "--cluster-key", keyA, "--join", seed.addr())
	stranger := c.start("stranger", "--cluster-key", keyB, "--join", seed.addr())
	if !waitFor(5*time.Second, func() bool { v, ok := friend.members("--cluster-key", keyA); return ok && v.count("Up") == 2 }) {
		t.Fatal("the member with the right key did not join")
	}
	if !waitFor(10*time.Second, func() bool { return strings.Contains(stranger.log.String(), "different --cluster-key") }) {
		t.Fatalf("the stranger's log does not say why it cannot join:\n%s", stranger.log.String())
	}
	v, _ := seed.members("--cluster-key", keyA)
	if len(v.Members) != 2 {
		t.Errorf("the seed lists %d members, want 2 (the stranger must not be one)", len(v.Members))
	}
	if _, errOut, code := shardctl("members", "--data-dir", seed.dir, "--cluster-key", keyB, "--timeout", "3s"); code == 0 {
		t.Errorf("shardctl with the wrong key reached the member")
	} else {
		t.Logf("shardctl with the wrong key: %s", strings.TrimSpace(errOut))
	}
}

func TestDifferentNumberOfShardsIsRefusedAtJoin(t *testing.T) {
	c := newCluster(t)
	seed := c.start("seed")
	odd := c.spawn("odd", "--join", seed.addr(), "--set", "sharding.number-of-shards=100")
	code, exited := odd.wait(15 * time.Second)
	if !exited || code != 2 {
		t.Fatalf("member with another number-of-shards: exited=%v code=%d\n%s", exited, code, odd.log.String())
	}
	if !strings.Contains(odd.log.String(), "sharding.number-of-shards: this cluster uses 1000, the joining member 100") {
		t.Errorf("log does not explain the refusal:\n%s", odd.log.String())
	}
}

func TestDataDirInUse(t *testing.T) {
	c := newCluster(t)
	first := c.start("one")
	dup := c.spawnIn("dup", first.dir)
	code, exited := dup.wait(10 * time.Second)
	if !exited || code != 2 || !strings.Contains(dup.log.String(), "is held by another sharddaemon (pid") {
		t.Fatalf("second daemon on one data directory: exited=%v code=%d\n%s", exited, code, dup.log.String())
	}
}

func TestBadConfigurationStopsTheStart(t *testing.T) {
	c := newCluster(t)
	cfg := filepath.Join(c.root, "bad.yaml")
	if err := os.WriteFile(cfg, []byte("cluster:\n  failure-detector:\n    treshold: 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := c.spawn("bad", "--config", cfg)
	code, exited := d.wait(10 * time.Second)
	if !exited || code != 2 || !strings.Contains(d.log.String(), `unknown key "cluster.failure-detector.treshold"`) ||
		!strings.Contains(d.log.String(), `did you mean "cluster.failure-detector.threshold"`) {
		t.Fatalf("exited=%v code=%d\n%s", exited, code, d.log.String())
	}
	d = c.spawn("bad2", "--set", "cluster.split-brain-resolver.stable-after=soon")
	code, _ = d.wait(10 * time.Second)
	if code != 2 || !strings.Contains(d.log.String(), `cluster.split-brain-resolver.stable-after = "soon" (flag)`) {
		t.Fatalf("code=%d\n%s", code, d.log.String())
	}
}

// TestFullRestartWaitsForAMajorityOfTheLastCluster: every member keeps the size of the
// cluster it was last Up in; after all three are killed, the first one started alone forms
// a new cluster but stays Joining (saying why) until a second, a majority of three, has
// joined — so no coordinator reads the store from one stale replica (docs/chaos.md). A
// member started with cluster.forget-last-cluster=on forms a cluster alone at once.
func TestFullRestartWaitsForAMajorityOfTheLastCluster(t *testing.T) {
	c := newCluster(t)
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("the cluster did not form")
	}
	kept := func(d *daemon) string {
		data, _ := os.ReadFile(filepath.Join(d.dir, "last-cluster-size"))
		return strings.TrimSpace(string(data))
	}
	if !waitFor(5*time.Second, func() bool { return kept(ds[0]) == "3" && kept(ds[1]) == "3" && kept(ds[2]) == "3" }) {
		t.Fatalf("last-cluster-size: %q %q %q, want 3 in every data directory", kept(ds[0]), kept(ds[1]), kept(ds[2]))
	}
	for _, d := range ds {
		d.kill()
	}
	status := func(d *daemon) string {
		v, _ := d.members()
		return v.status(d.peerID())
	}

	m1 = c.start("m1")
	if !waitFor(20*time.Second, func() bool { return strings.Contains(m1.log.String(), "waiting for members of the last cluster") }) { // warned once the wait has lasted 5 s
		t.Fatalf("m1 alone does not say what it waits for:\n%s", m1.log.String())
	}
	// By now m1 has been alone for 5 s: a member alone is Up within a second when it need not wait.
	if s := status(m1); s != "Joining" {
		t.Fatalf("m1 alone after a full restart is %q, want Joining until a majority of the last cluster of 3 has joined", s)
	}
	// What an operator asks tells why, and what to do.
	const why = "a restarted cluster moves no member Up before 2 members of its last cluster have joined (a majority), so that its coordinator reads what that cluster stored (joined so far: 1)"
	if out, _, code := shardctl("members", "--data-dir", m1.dir); code != 0 || !strings.Contains(out, "waiting: "+why) || !strings.Contains(out, "cluster.forget-last-cluster=on") {
		t.Errorf("members of m1 alone (exit %d):\n%s", code, out)
	}
	if out, errOut, code := shardctl("health", "--data-dir", m1.dir); code != 1 || !strings.Contains(out+errOut, "member is Joining, not Up: "+why) {
		t.Errorf("health of m1 alone (exit %d), want 1 and why:\n%s%s", code, out, errOut)
	}
	m2 := c.start("m2", "--join", m1.addr())
	if !waitFor(10*time.Second, func() bool { return allAgree([]*daemon{m1, m2}, 2) }) {
		t.Fatalf("m1 and m2, a majority of the last cluster, did not both move Up: m1 %s, m2 %s", status(m1), status(m2))
	}

	// m3 was last Up in the cluster of three; told to forget it, it forms a cluster of its own.
	m3 := c.start("m3", "--set", "cluster.forget-last-cluster=on")
	if !waitFor(10*time.Second, func() bool { return status(m3) == "Up" }) {
		t.Fatalf("m3 with cluster.forget-last-cluster=on is %q alone, want Up", status(m3))
	}
}

// TestLeaseMajorityDownsTheKilledMember: with lease-majority, the leader of the four that are
// left acquires the resolver's lease — the store lease, kept in the cluster's replicated
// store — and only then downs the killed member, which is removed.
func TestLeaseMajorityDownsTheKilledMember(t *testing.T) {
	c := newCluster(t, "--set", "cluster.split-brain-resolver.active-strategy=lease-majority",
		"--set", "cluster.split-brain-resolver.stable-after=2s")
	ds, _ := startFive(c)
	if !waitFor(5*time.Second, func() bool { return allAgree(ds, 5) }) {
		t.Fatal("cluster did not form")
	}
	time.Sleep(10 * time.Second) // the failure detectors learn the heartbeat rhythm (as above)
	victim := ds[4]
	id := victim.peerID()
	victim.kill()
	killed := time.Now()
	rest := ds[:4]
	// detection (< 5 s) + stable-after (2 s) + the lease (a store round) + down-removal-margin
	// (stable-after with lease-majority) + the downed member's lease
	if !waitFor(20*time.Second, func() bool {
		return everyone(rest, func(v membersView) bool { return v.status(id) == "Removed" })
	}) {
		t.Fatal("the killed member was not downed and removed")
	}
	t.Logf("downed and removed everywhere %v after kill -9", time.Since(killed).Round(time.Millisecond))
	decided := 0
	for _, d := range rest {
		if log := d.log.String(); strings.Contains(log, "split-brain resolver decision") {
			if !strings.Contains(log, "lease=true") || !strings.Contains(log, "holding the lease") {
				t.Errorf("%s decided without the lease:\n%s", d.name, log)
			}
			decided++
		}
	}
	if decided != 1 {
		t.Errorf("%d members took the decision, want the leader alone", decided)
	}
}

// TestSigtermIsPrompt: a daemon that never joined (its seed does not answer) exits 0 at
// once on SIGTERM instead of waiting out a leave that cannot happen; and when every member
// of a cluster gets SIGTERM at once, all exit 0 well within handoff-timeout (60 s), even
// when the leader removes the others and stops before they hear it (they stop once they
// have been Exiting for the exiting timeout, 10 s).
func TestSigtermIsPrompt(t *testing.T) {
	c := newCluster(t, "--entity-types", "counter", "--set", "sharding.number-of-shards=30")
	ghost := "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWJj2DY3nGiJfExXY3qJsk2KXm2LqJpSFNCrzxzsteCcLB"
	lonely := c.start("lonely", "--join", ghost)
	lonely.signal(syscall.SIGTERM)
	if code, exited := lonely.wait(5 * time.Second); !exited || code != 0 {
		t.Fatalf("a daemon that never joined: exited=%v code=%d within 5 s of SIGTERM\n%s", exited, code, lonely.log.String())
	}

	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	cl := client(t, m1)
	if _, errs := askAll(cl, ids(30), "inc"); len(errs) > 0 {
		t.Fatalf("asks failed: %v", errs)
	}
	cl.Close()
	sent := time.Now()
	for _, d := range ds {
		d.signal(syscall.SIGTERM)
	}
	for _, d := range ds {
		code, exited := d.wait(time.Until(sent.Add(25 * time.Second)))
		if !exited || code != 0 {
			t.Fatalf("%s: exited=%v code=%d within 25 s of SIGTERM to every member\n%s", d.name, exited, code, d.log.String())
		}
	}
	t.Logf("all three exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
}
