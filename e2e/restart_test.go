package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFullRestartAfterAStaleMember replays the chaos finding fenced-after-full-restart on
// three real daemons: the first coordinator claims its term on all three; m1, the oldest,
// is killed and removed; the coordinator moves to another member and claims the next term
// on the two left, whose counters' state is then fenced by it; m1 restarts and joins, and before anti-entropy (every 5 s) brings the new term to its
// replica every member is killed. m1 is started first again. Alone it used to form a cluster
// at once and claim a term from its own stale replica — the same generation as the last
// coordinator's, below its epochs — and every save of a moved shard was refused. Now the
// cluster forms only once a majority of the last one has joined, the first coordinator reads
// the newest term from them, and every counter takes its increment. Without the wait it
// fails as the chaos run did: "write fenced off".
func TestFullRestartAfterAStaleMember(t *testing.T) {
	c := newCluster(t, append(dataFlags,
		"--set", "cluster.failure-detector.heartbeat-interval=250ms",
		"--set", "cluster.failure-detector.acceptable-heartbeat-pause=1500ms",
		"--set", "cluster.split-brain-resolver.stable-after=1s")...)
	// The first term is claimed on all three (no member is Up before three have joined).
	m1 := c.start("m1", "--set", "cluster.min-nr-of-members=3")
	m2 := c.start("m2", "--join", m1.addr(), "--set", "cluster.min-nr-of-members=3")
	m3 := c.start("m3", "--join", m1.addr(), "--set", "cluster.min-nr-of-members=3")
	if !waitFor(10*time.Second, func() bool { return allAgree([]*daemon{m1, m2, m3}, 3) }) {
		t.Fatal("the cluster did not form")
	}
	const n = 30
	counters := func(cl *daemon, msg string, want func(i int) string) {
		t.Helper()
		cli := client(t, cl)
		for i := range n {
			if got := ask(t, cli, "counter", fmt.Sprintf("c%d", i), msg); want != nil && got != want(i) {
				t.Fatalf("%s c%d = %s, want %s", msg, i, got, want(i))
			}
		}
	}
	counters(m2, "inc", func(int) string { return "1" })

	// m1 goes; the coordinator moves and claims the next term on m2 and m3; the shards m1 had
	// start there under it, and their counters' state is fenced by its epochs.
	m1.kill()
	if !waitFor(15*time.Second, func() bool {
		return everyone([]*daemon{m2, m3}, func(v membersView) bool { return v.status(m1.peerID()) == "Removed" || v.status(m1.peerID()) == "" })
	}) {
		t.Fatal("m1 was not removed after kill -9")
	}
	counters(m2, "inc", func(int) string { return "2" })

	// m1 comes back, and everyone is killed before its replica catches up.
	m1 = c.start("m1", "--join", m2.addr())
	if !waitFor(10*time.Second, func() bool { return allAgree([]*daemon{m1, m2, m3}, 3) }) {
		t.Fatal("m1 did not rejoin")
	}
	for _, d := range []*daemon{m1, m2, m3} {
		d.kill()
	}

	m1 = c.start("m1")
	m2 = c.start("m2", "--join", m1.addr())
	m3 = c.start("m3", "--join", m1.addr())
	if !waitFor(15*time.Second, func() bool { return allAgree([]*daemon{m1, m2, m3}, 3) }) {
		t.Fatal("the cluster did not form again")
	}
	counters(m1, "get", func(int) string { return "2" })
	counters(m3, "inc", func(int) string { return "3" })
}

// TestColdRestartWithSeedsFormsOneCluster: every member killed and started again with
// --join naming the other two — what supervisors do after the split-brain resolver downed
// every member (a chaos run: down-all-when-unstable) or after a power cut. None of them is
// in a cluster, so none can admit the others; they used to ask each other for ever. Now the
// one with the lowest peer id forms the cluster once every seed answered that it is in none
// and lists it, and the others join it.
func TestColdRestartWithSeedsFormsOneCluster(t *testing.T) {
	c := newCluster(t, append(dataFlags, "--set", "cluster.split-brain-resolver.stable-after=1s")...)
	names := []string{"m1", "m2", "m3"}
	listen := map[string]string{}
	for _, name := range names {
		listen[name] = fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t, "127.0.0.1"))
	}
	ds := []*daemon{c.start("m1", "--listen", listen["m1"])}
	for _, name := range names[1:] {
		ds = append(ds, c.start(name, "--listen", listen[name], "--join", ds[0].addr()))
	}
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("the cluster did not form")
	}
	seed := map[string]string{}
	for i, name := range names {
		seed[name] = listen[name] + "/p2p/" + ds[i].peerID()
	}
	for _, d := range ds {
		d.kill()
	}
	for i, name := range names {
		var args []string
		for _, other := range names {
			if other != name {
				args = append(args, "--join", seed[other])
			}
		}
		ds[i] = c.start(name, append([]string{"--listen", listen[name]}, args...)...)
	}
	if !waitFor(45*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("the members restarted with each other as seeds did not form a cluster")
	}
	formed := 0
	for _, d := range ds {
		formed += strings.Count(d.log.String(), "forming a new cluster")
	}
	if formed != 1 { // the logs of the processes started again
		t.Errorf("%d members formed a cluster after the restart, want 1", formed)
	}
}
