package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// adminFlags: quick failure detection (heartbeats every 250 ms, a pause of 1.5 s), so a
// killed member is unreachable within a few seconds while a stats query of 500 ms to a
// SIGSTOPped member stays under the pause; a member downed is removed soon after its lease
// ran out (until then the coordinator waits for its region in handoffs); admin identity id
// allowed.
func adminFlags(id string) []string {
	return []string{
		"--entity-types", "counter,echo",
		"--set", "sharding.number-of-shards=30",
		"--set", "cluster.failure-detector.heartbeat-interval=250ms",
		"--set", "cluster.failure-detector.expected-response-after=250ms",
		"--set", "cluster.failure-detector.acceptable-heartbeat-pause=1500ms",
		"--set", "cluster.down-removal-margin=500ms",
		"--admin-allow", id,
	}
}

// keygenAdmin makes an admin identity file in dir and returns its path and peer id.
func keygenAdmin(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	path := filepath.Join(dir, name)
	out, errOut, code := shardctl("keygen", "admin", "--out", path, "--json")
	var k struct {
		File   string `json:"file"`
		PeerID string `json:"peer_id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &k) != nil || k.PeerID == "" {
		t.Fatalf("keygen admin: exit %d %s %s", code, out, errOut)
	}
	return path, k.PeerID
}

// run is one shardctl invocation and what came of it.
type run struct {
	args     []string
	out, err string
	code     int
}

// ctlAll runs shardctl invocations at once (a step costs one process round trip).
func ctlAll(argss ...[]string) []run {
	out := make([]run, len(argss))
	var wg sync.WaitGroup
	for i, args := range argss {
		wg.Go(func() {
			o, e, c := shardctl(args...)
			out[i] = run{args: args, out: o, err: e, code: c}
		})
	}
	wg.Wait()
	return out
}

func (r run) String() string {
	return "shardctl " + strings.Join(r.args, " ") + ": exit " + strconv.Itoa(r.code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err
}

// decode parses a command's --json output.
func decode[T any](t *testing.T, r run) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.out), &v); err != nil {
		t.Fatalf("%v\nnot JSON: %v", r, err)
	}
	return v
}

// background runs a long shardctl (watch, bench) and collects its output.
type background struct {
	cmd      *exec.Cmd
	out, err *lockedBuffer
	done     chan struct{}
	code     int
}

func startCtl(t *testing.T, args ...string) *background {
	t.Helper()
	b := &background{out: &lockedBuffer{}, err: &lockedBuffer{}, done: make(chan struct{})}
	b.cmd = exec.Command(filepath.Join(bin, "shardctl"), args...)
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.err
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := b.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			b.code = ee.ExitCode()
		}
		close(b.done)
	}()
	t.Cleanup(func() { _ = b.cmd.Process.Kill(); <-b.done })
	return b
}

func (b *background) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-b.done:
		return b.code
	case <-time.After(timeout):
		t.Fatalf("shardctl %v did not finish within %v\nstdout:\n%s\nstderr:\n%s", b.cmd.Args[1:], timeout, b.out.String(), b.err.String())
		return -1
	}
}

func short(id string) string { return "…" + id[len(id)-8:] }

// TestAdmin drives every shardctl command of the admin protocol against one cluster of
// four real daemons, in an order that uses each member up: inspection, stats with a member
// SIGSTOPped, refusals, bad input, a graceful shutdown under load, down of a killed
// member, and leave.
func TestAdmin(t *testing.T) {
	if testing.Short() {
		t.Skip("long: four daemons, a shutdown under load, kill -9")
	}
	keys := t.TempDir()
	adminKey, adminID := keygenAdmin(t, keys, "admin.key")
	intruderKey, intruderID := keygenAdmin(t, keys, "intruder.key")
	c := newCluster(t, adminFlags(adminID)...)
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr()), c.start("m4", "--join", m1.addr())}
	m2, m3, m4 := ds[1], ds[2], ds[3]
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 4) }) {
		t.Fatal("cluster did not form")
	}
	ctl := func(d *daemon, cmd string, args ...string) []string {
		return append([]string{cmd, "--data-dir", d.dir}, args...)
	}
	_, errs := askAll(client(t, m1), ids(40), "inc")
	if len(errs) > 0 {
		t.Fatalf("asks failed: %v", errs)
	}

	t.Run("inspect", func(t *testing.T) { inspect(t, ds, ctl) })

	watchJSON := startCtl(t, ctl(m1, "watch", "--json")...)
	watchText := startCtl(t, ctl(m1, "watch", "--type", "counter")...)
	if !waitFor(5*time.Second, func() bool {
		return strings.Contains(watchJSON.err.String(), "watching") && strings.Contains(watchText.err.String(), "watching")
	}) {
		t.Fatalf("watch did not start:\n%s\n%s", watchJSON.err.String(), watchText.err.String())
	}

	t.Run("stats with a member stopped", func(t *testing.T) {
		m3.signal(syscall.SIGSTOP)
		rs := ctlAll(ctl(m1, "stats", "--json", "--query-timeout", "500ms"), ctl(m1, "stats", "--query-timeout", "500ms"))
		m3.signal(syscall.SIGCONT)
		for _, r := range rs {
			if r.code != 3 || !strings.Contains(r.err, "partial result") {
				t.Errorf("want exit 3 and a partial result:\n%v", r)
			}
		}
		st := decode[struct {
			Complete bool `json:"complete"`
			Failed   []struct {
				Node   string `json:"node"`
				Shards []struct {
					EntityType string   `json:"entity_type"`
					Shards     []string `json:"shards"`
				} `json:"shards"`
			} `json:"failed"`
			Regions []struct {
				Node string `json:"node"`
			} `json:"regions"`
		}](t, rs[0])
		if st.Complete || len(st.Failed) != 1 || st.Failed[0].Node != m3.peerID() || len(st.Regions) != 6 {
			t.Fatalf("the stopped member is not listed as failed: %+v", st)
		}
		for _, fs := range st.Failed[0].Shards {
			if fs.EntityType == "counter" && len(fs.Shards) == 0 {
				t.Errorf("the coordinator's shards on the stopped member are not listed: %+v", st.Failed[0])
			}
		}
		if !strings.Contains(rs[1].out, "DID NOT ANSWER") || !strings.Contains(rs[1].out, short(m3.peerID())) {
			t.Errorf("human stats do not name the stopped member:\n%v", rs[1])
		}
	})

	t.Run("refused", func(t *testing.T) {
		rs := ctlAll(
			ctl(m2, "shutdown"),
			ctl(m2, "shutdown", "--identity", intruderKey),
			ctl(m1, "down", "--identity", intruderKey, "--yes", m4.peerID()),
			ctl(m1, "leave", "--identity", intruderKey, m2.peerID()),
			ctl(m1, "down", "--identity", adminKey, "--yes", m4.peerID()), // reachable: needs --force
		)
		for i, r := range rs {
			if r.code != 4 || !strings.Contains(r.err, "refused") || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
				t.Errorf("want exit 4 with one line saying why:\n%v", r)
			}
			if i == 1 && !strings.Contains(r.err, intruderID) {
				t.Errorf("the refusal does not name the caller:\n%v", r)
			}
		}
		if !strings.Contains(rs[4].err, "reachable") {
			t.Errorf("down of a reachable member: %v", rs[4])
		}
		for _, d := range []*daemon{m1, m2} {
			if log := d.log.String(); !strings.Contains(log, "admin call refused") || !strings.Contains(log, intruderID) {
				t.Errorf("%s did not log the refusal with the caller's peer id", d.name)
			}
		}
	})

	t.Run("bad input", func(t *testing.T) {
		rs := ctlAll(
			ctl(m1, "locate", "nosuch", "u1"),
			ctl(m1, "locate", "counter", ""),
			ctl(m1, "region-state", "--type", "nosuch"),
			ctl(m1, "stats", "--type", "nosuch"),
			ctl(m1, "bench", "--type", "nosuch"),
			ctl(m1, "down", "--identity", adminKey, "--yes", "nosuchmember"),
			ctl(m1, "leave", "--identity", adminKey, "12D3KooWJj2DY3nGiJfExXY3qJsk2KXm2LqJpSFNCrzxzsteCcLB"),
			ctl(m1, "health", "--wait", "soonish"),
			ctl(m1, "shutdown", "--identity", adminKey, "--timeout", "-1s"),
			ctl(m1, "ask", "nosuch", "u1", "get"),
		)
		for _, r := range rs {
			if r.code != 2 || strings.Count(strings.TrimSpace(r.err), "\n") != 0 || r.err == "" {
				t.Errorf("want exit 2 and one line:\n%v", r)
			}
		}
		for i, want := range map[int]string{0: `"nosuch"`, 1: "empty", 5: "nosuchmember", 6: "unknown member", 7: "soonish"} {
			if !strings.Contains(rs[i].err, want) {
				t.Errorf("the error does not name the problem (%s):\n%v", want, rs[i])
			}
		}
		if !allAgree(ds, 4) {
			t.Error("bad input changed the cluster")
		}
	})

	t.Run("shutdown under load", func(t *testing.T) {
		m3ID := m3.peerID() // its addrs file goes with it
		bench := startCtl(t, ctl(m1, "bench", "--type", "counter", "--entities", "200", "--concurrency", "8", "--duration", "4s", "--ask", "--message", "inc", "--json")...)
		if !waitFor(5*time.Second, func() bool { return strings.Contains(bench.err.String(), "1s") }) {
			t.Fatalf("bench shows no progress:\n%s", bench.err.String())
		}
		r := ctlAll(ctl(m3, "shutdown", "--identity", adminKey, "--timeout", "30s"))[0]
		if r.code != 0 || !strings.Contains(r.out, "shards left") || !strings.Contains(r.out, "left the cluster") {
			t.Fatalf("shutdown:\n%v", r)
		}
		if code, ok := m3.wait(10 * time.Second); !ok || code != 0 {
			t.Fatalf("the shut down daemon: exited=%v code=%d", ok, code)
		}
		if code := bench.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("asks failed during the shutdown: exit %d\n%s\n%s", code, bench.out.String(), bench.err.String())
		}
		b := decode[struct {
			Ops       int64 `json:"ops"`
			Errors    int64 `json:"errors"`
			LatencyUs struct {
				P50, P90, P99, Max int64
			} `json:"latency_us"`
		}](t, run{args: bench.cmd.Args, out: bench.out.String()})
		if b.Ops == 0 || b.Errors != 0 || b.LatencyUs.P50 == 0 || b.LatencyUs.P99 < b.LatencyUs.P50 || b.LatencyUs.Max < b.LatencyUs.P99 {
			t.Fatalf("bench: %+v", b)
		}
		t.Logf("%d asks during the shutdown, none failed; p50 %dµs p99 %dµs", b.Ops, b.LatencyUs.P50, b.LatencyUs.P99)
		st := decode[struct {
			Complete bool `json:"complete"`
			Regions  []struct {
				Node string `json:"node"`
			} `json:"regions"`
		}](t, ctlAll(ctl(m1, "stats", "--json", "--type", "counter"))[0])
		if !st.Complete || len(st.Regions) != 3 || slices.ContainsFunc(st.Regions, func(r struct {
			Node string `json:"node"`
		}) bool {
			return r.Node == m3ID
		}) {
			t.Errorf("stats after the shutdown: %+v", st)
		}

		// The watchers saw the handoffs and the member go.
		if !waitFor(5*time.Second, func() bool {
			return strings.Contains(watchJSON.out.String(), `"member":"`+m3ID+`"`) &&
				strings.Contains(watchJSON.out.String(), `"kind":"member-removed"`)
		}) {
			t.Errorf("watch --json did not see the member removed:\n%s", watchJSON.out.String())
		}
		var handoffs int
		for _, line := range strings.Split(strings.TrimSpace(watchJSON.out.String()), "\n") {
			var ev struct {
				Kind, From, Epoch string
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("watch --json line %q: %v", line, err)
			}
			if ev.Kind == "handoff-completed" && ev.From == m3ID && ev.Epoch != "" {
				handoffs++
			}
		}
		if handoffs == 0 {
			t.Errorf("watch --json saw no handoff from the member shut down:\n%s", watchJSON.out.String())
		}
		if text := watchText.out.String(); !strings.Contains(text, "handoff-completed") || !strings.Contains(text, "from="+short(m3ID)) ||
			!strings.Contains(text, "member-removed") || strings.Contains(text, "type=echo") {
			t.Errorf("watch --type counter:\n%s", text)
		}
		for _, w := range []*background{watchJSON, watchText} {
			_ = w.cmd.Process.Signal(syscall.SIGINT)
			if code := w.wait(t, 5*time.Second); code != 0 {
				t.Errorf("watch stopped by SIGINT: exit %d\n%s", code, w.err.String())
			}
		}
	})

	t.Run("down", func(t *testing.T) {
		m4.kill()
		id := m4.peerID()
		if !waitFor(10*time.Second, func() bool { v, ok := m1.members(); return ok && !v.reachable(id) }) {
			t.Fatal("the killed member did not become unreachable")
		}
		if r := ctlAll(ctl(m1, "down", "--identity", adminKey, short(id)))[0]; r.code != 2 || !strings.Contains(r.err, "--yes") {
			t.Errorf("down without a terminal and without --yes:\n%v", r)
		}
		r := ctlAll(ctl(m1, "down", "--identity", adminKey, "--yes", short(id), "--json"))[0]
		d := decode[struct {
			Node      string `json:"node"`
			Downed    bool   `json:"downed"`
			Reachable bool   `json:"reachable"`
		}](t, r)
		if r.code != 0 || d.Node != id || !d.Downed || d.Reachable {
			t.Fatalf("down:\n%v", r)
		}
		if !waitFor(10*time.Second, func() bool { v, ok := m1.members(); return ok && v.status(id) == "Removed" }) {
			t.Fatal("the downed member was not removed")
		}
	})

	t.Run("leave", func(t *testing.T) {
		m2ID := m2.peerID()
		r := ctlAll(ctl(m1, "leave", "--identity", adminKey, "--json", short(m2ID)))[0]
		l := decode[struct {
			Node  string `json:"node"`
			Phase string `json:"phase"`
		}](t, r)
		if r.code != 0 || l.Node != m2ID {
			t.Fatalf("leave:\n%v", r)
		}
		if code, ok := m2.wait(15 * time.Second); !ok || code != 0 {
			t.Fatalf("the leaving daemon: exited=%v code=%d\n%s", ok, code, m2.log.String())
		}
		if r := ctlAll(ctl(m1, "health"))[0]; r.code != 0 {
			t.Errorf("the last member is not ready:\n%v", r)
		}
	})
}

// inspect checks the read-only commands, human and JSON, on the four members.
func inspect(t *testing.T, ds []*daemon, ctl func(*daemon, string, ...string) []string) {
	m1, m2, m4 := ds[0], ds[1], ds[3]
	rs := ctlAll(
		ctl(m1, "types", "--json"),
		ctl(m2, "region-state", "--json", "--type", "counter"),
		ctl(m2, "region-state"),
		ctl(m1, "stats", "--json"),
		ctl(m1, "stats", "--type", "counter"),
		ctl(m2, "locate", "counter", "counter-7", "--json"),
		ctl(m2, "locate", "counter", "counter-7"),
		ctl(m4, "health", "--json"),
		ctl(m4, "health", "--live"),
		ctl(m1, "health", "--wait", "5s"),
		ctl(m2, "locate", "--json", "counter", "never-asked"),
		ctl(m1, "region-state", "--json", "--node", short(m4.peerID())), // a member by name, through m1
	)
	for _, r := range rs {
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
	}
	if types := decode[[]string](t, rs[0]); strings.Join(types, ",") != "counter,echo" {
		t.Errorf("types: %v", types)
	}
	regions := decode[[]struct {
		Node   string `json:"node"`
		Shards []struct {
			Shard    string   `json:"shard"`
			Entities int      `json:"entities"`
			IDs      []string `json:"ids"`
		} `json:"shards"`
	}](t, rs[1])
	if len(regions) != 1 || regions[0].Node != m2.peerID() {
		t.Errorf("region-state --json: %+v", regions)
	}
	if !strings.Contains(rs[2].out, "member "+short(m2.peerID())+", counter:") || !strings.Contains(rs[2].out, "ENTITY IDS") {
		t.Errorf("region-state:\n%v", rs[2])
	}
	st := decode[struct {
		Complete bool `json:"complete"`
		Regions  []struct {
			Node       string `json:"node"`
			EntityType string `json:"entity_type"`
		} `json:"regions"`
		Totals []struct {
			EntityType string `json:"entity_type"`
			Entities   int    `json:"entities"`
			Members    int    `json:"members"`
		} `json:"totals"`
	}](t, rs[3])
	if !st.Complete || len(st.Regions) != 8 || len(st.Totals) != 2 || st.Totals[0].Entities != 40 || st.Totals[0].Members != 4 {
		t.Errorf("stats --json: %+v", st)
	}
	if !strings.Contains(rs[4].out, "counter: ") || !strings.Contains(rs[4].out, "40 live entities on 4 members") {
		t.Errorf("stats:\n%v", rs[4])
	}
	loc := decode[struct {
		Shard    string `json:"shard"`
		Home     string `json:"home"`
		Epoch    string `json:"epoch"`
		Source   string `json:"source"`
		Alive    bool   `json:"alive"`
		Complete bool   `json:"complete"`
	}](t, rs[5])
	if !loc.Alive || !loc.Complete || loc.Source != "coordinator" || loc.Epoch == "" || !slices.ContainsFunc(ds, func(d *daemon) bool { return d.peerID() == loc.Home }) {
		t.Errorf("locate --json: %+v", loc)
	}
	// The home's own region state lists the entity in that shard.
	for _, d := range ds {
		if d.peerID() != loc.Home {
			continue
		}
		r := ctlAll(ctl(d, "region-state", "--json", "--type", "counter"))[0]
		found := false
		for _, reg := range decode[[]struct {
			Shards []struct {
				Shard string   `json:"shard"`
				IDs   []string `json:"ids"`
			} `json:"shards"`
		}](t, r) {
			for _, sh := range reg.Shards {
				found = found || sh.Shard == loc.Shard && slices.Contains(sh.IDs, "counter-7")
			}
		}
		if !found {
			t.Errorf("the home %s does not host counter-7 in shard %s:\n%v", d.name, loc.Shard, r)
		}
	}
	if !strings.Contains(rs[6].out, "alive        yes") || !strings.Contains(rs[6].out, "from the coordinator") {
		t.Errorf("locate:\n%v", rs[6])
	}
	h := decode[struct {
		Node  string `json:"node"`
		Live  bool   `json:"live"`
		Ready bool   `json:"ready"`
	}](t, rs[7])
	if !h.Live || !h.Ready || h.Node != m4.peerID() {
		t.Errorf("health --json: %+v", h)
	}
	if !strings.Contains(rs[8].out, "live     yes") || !strings.Contains(rs[9].out, "ready    yes") {
		t.Errorf("health:\n%v\n%v", rs[8], rs[9])
	}
	if byName := decode[[]struct {
		Node string `json:"node"`
	}](t, rs[11]); len(byName) != 2 || byName[0].Node != m4.peerID() {
		t.Errorf("region-state --node NAME: %v", rs[11])
	}
	if ghost := decode[struct {
		Alive bool `json:"alive"`
	}](t, rs[10]); ghost.Alive {
		t.Errorf("an entity never asked is alive: %v", rs[10])
	}
}
