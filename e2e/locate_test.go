package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocateUnknownWhenTheHomeIsSilent on 3 real daemons: the home of a counter is
// SIGSTOPped, so it stays allocated (the split-brain resolver waits 10 minutes before it
// downs anyone) but cannot answer. locate then says the entity's liveness is unknown —
// null in --json, "unknown (the home did not answer)" in text, never "no" — names the silent
// home among its problems and exits 3. Once the home runs again, locate answers alive yes
// and exits 0.
func TestLocateUnknownWhenTheHomeIsSilent(t *testing.T) {
	c := newCluster(t, append(shardingFlags,
		"--set", "cluster.split-brain-resolver.stable-after=10m",
		"--set", "sharding.shard-region-query-timeout=1s")...)
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	ctl := func(d *daemon, args ...string) run {
		o, e, code := shardctl(append([]string{args[0], "--data-dir", d.dir}, args[1:]...)...)
		return run{args: args, out: o, err: e, code: code}
	}
	type location struct {
		Home     string   `json:"home"`
		Alive    *bool    `json:"alive"`
		Complete bool     `json:"complete"`
		Problems []string `json:"problems"`
	}
	// A counter at home on m2 or m3 (m1, the oldest, runs the coordinator and is asked).
	var id string
	var home *daemon
	for i := 0; home == nil && i < 100; i++ {
		id = fmt.Sprintf("silent-%d", i)
		if r := ctl(m1, "ask", "counter", id, "get"); r.code != 0 {
			t.Fatalf("%v", r)
		}
		loc := decode[location](t, ctl(m1, "locate", "counter", id, "--json"))
		for _, d := range ds[1:] {
			if d.peerID() == loc.Home {
				home = d
			}
		}
	}
	if home == nil {
		t.Fatal("no counter of 100 is at home on m2 or m3")
	}

	home.signal(syscall.SIGSTOP)
	t.Cleanup(func() { home.signal(syscall.SIGCONT) }) // killable again whatever happens
	rs := ctlAll(
		[]string{"locate", "--data-dir", m1.dir, "counter", id, "--json"},
		[]string{"locate", "--data-dir", m1.dir, "counter", id},
	)
	home.signal(syscall.SIGCONT)
	js, text := rs[0], rs[1]
	loc := decode[location](t, js)
	if js.code != 3 || loc.Alive != nil || loc.Complete || loc.Home != home.peerID() ||
		len(loc.Problems) != 1 || !strings.Contains(loc.Problems[0], "home "+home.peerID()) {
		t.Errorf("locate --json with the home stopped: want exit 3, alive null, the home named among the problems:\n%v", js)
	}
	if text.code != 3 || !strings.Contains(text.out, "unknown (the home did not answer)") || strings.Contains(text.out, "no (it starts") ||
		!strings.Contains(text.err, "partial result") {
		t.Errorf("locate with the home stopped: want exit 3 and alive unknown:\n%v", text)
	}

	// Running again, the home answers.
	var r run
	if !waitFor(20*time.Second, func() bool {
		r = ctl(m1, "locate", "counter", id, "--json")
		return r.code == 0
	}) {
		t.Fatalf("locate after SIGCONT:\n%v", r)
	}
	if loc := decode[location](t, r); loc.Alive == nil || !*loc.Alive || !loc.Complete {
		t.Fatalf("locate after SIGCONT: want alive yes:\n%v", r)
	}
}
