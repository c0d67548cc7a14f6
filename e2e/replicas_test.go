package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
)

// storeStatus is the part of shardctl store status --json the tests read.
type storeStatus struct {
	ReplicationFactor int  `json:"replication_factor"`
	Complete          bool `json:"complete"`
	Types             []struct {
		EntityType string `json:"entity_type"`
		Units      int    `json:"units"`
		Full       int    `json:"full"`
		Moving     int    `json:"moving"`
		Queued     int    `json:"queued"`
		Members    int    `json:"members"`
	} `json:"types"`
	Members []struct {
		Node          string `json:"node"`
		MaxMoves      int    `json:"max_moves"`
		MovesStarted  int    `json:"moves_started"`
		MovesFinished int    `json:"moves_finished"`
		RecordsCopied int    `json:"records_copied"`
		MetadataRole  string `json:"metadata_role"`
		MetadataLead  string `json:"metadata_leader"`
		MetadataTerm  int    `json:"metadata_term"`
		Applied       int    `json:"metadata_applied"`
		Types         []struct {
			EntityType string `json:"entity_type"`
			Sets       int    `json:"sets"`
			Units      int    `json:"units"`
			Records    int    `json:"records"`
		} `json:"types"`
	} `json:"members"`
	Moves  []json.RawMessage `json:"moves"`
	Failed []struct {
		Node string `json:"node"`
	} `json:"failed"`
}

// metadataSettled reports whether the members are the voters of one metadata group with
// one leader that every member knows, having applied writes.
func (s storeStatus) metadataSettled() bool {
	leaders := 0
	for _, m := range s.Members {
		if (m.MetadataRole != "leader" && m.MetadataRole != "follower") || m.MetadataLead == "" || m.MetadataTerm == 0 || m.Applied == 0 {
			return false
		}
		if m.MetadataRole == "leader" {
			leaders++
		}
	}
	return leaders == 1
}

// records sums the counter records the members hold as replicas, and the moves they
// finished.
func (s storeStatus) records() (records, finished int) {
	for _, m := range s.Members {
		finished += m.MovesFinished
		for _, h := range m.Types {
			if h.EntityType == "counter" {
				records += h.Records
			}
		}
	}
	return records, finished
}

func askStoreStatus(d *daemon) (storeStatus, int, string) {
	out, errOut, code := shardctl("store", "status", "--json", "--data-dir", d.dir, "--timeout", "20s")
	var st storeStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return st, code, errOut + out
	}
	return st, code, errOut
}

// TestStoreStatusAndPartialReads: on three real daemons (replication factor 3), store
// status shows the counter's units on full sets spread over the three members and what each
// holds; stats shows the same holdings; store status --watch streams. With two members
// stopped (SIGSTOP, not downed), history, stats and store status give partial results with
// exit 3 naming them. A fourth member joining makes the sets move: store status and the
// metrics count the moves and the records they copied, and every record is on three
// replicas again once they are done.
func TestStoreStatusAndPartialReads(t *testing.T) {
	c := newCluster(t, "--entity-types", "counter",
		"--set", "sharding.number-of-shards=12",
		"--set", "cluster.failure-detector.heartbeat-interval=250ms",
		"--set", "cluster.failure-detector.acceptable-heartbeat-pause=1500ms",
		"--set", "cluster.split-brain-resolver.stable-after=120s", // nobody is downed here
		"--set", "sharding.updating-state-timeout=2s",
		"--metrics-listen", "127.0.0.1:0")
	m1 := c.start("m1", "--set", "cluster.min-nr-of-members=3")
	m2 := c.start("m2", "--join", m1.addr())
	m3 := c.start("m3", "--join", m1.addr())
	for _, d := range []*daemon{m1, m2, m3} {
		if _, errOut, code := shardctl("health", "--data-dir", d.dir, "--wait", "60s"); code != 0 {
			t.Fatalf("%s not ready: %s\n%s", d.name, errOut, d.log.String())
		}
	}
	cl := client(t, m1)
	const n = 30
	for _, id := range ids(n) {
		if got := ask(t, cl, "counter", id, "inc"); got != "1" {
			t.Fatalf("%s = %s after inc", id, got)
		}
	}

	// Every state on all three replicas (replication factor 3 of 3 members).
	var st storeStatus
	if !waitFor(30*time.Second, func() bool {
		var code int
		st, code, _ = askStoreStatus(m1)
		recs, _ := st.records()
		return code == 0 && recs == 3*n && len(st.Types) == 1 && st.Types[0].Units == st.Types[0].Full && st.Types[0].Moving == 0 &&
			st.metadataSettled()
	}) {
		t.Fatalf("store status never showed %d counter records on full sets and a metadata group of three voters with one leader: %+v", 3*n, st)
	}
	if st.ReplicationFactor != 3 || !st.Complete || len(st.Members) != 3 || st.Types[0].Units == 0 || st.Types[0].Members != 3 {
		t.Errorf("store status: %+v", st)
	}
	for _, m := range st.Members {
		if m.MaxMoves != 4 || len(m.Types) != 1 || m.Types[0].Records != n || m.Types[0].Sets != st.Types[0].Units {
			t.Errorf("member %s: %+v", m.Node, m)
		}
	}
	out, errOut, code := shardctl("store", "status", "--data-dir", m1.dir)
	if code != 0 || !strings.Contains(out, "replication factor 3") || !strings.Contains(out, "no move in progress") ||
		!strings.Contains(out, "metadata group: ") {
		t.Errorf("store status: exit %d\n%s%s", code, out, errOut)
	}
	var stats struct {
		Regions []struct {
			Node        string `json:"node"`
			HeldRecords int    `json:"held_records"`
		} `json:"regions"`
		Totals []struct {
			HeldRecords int `json:"held_records"`
		} `json:"totals"`
	}
	out, errOut, code = shardctl("stats", "--json", "--data-dir", m2.dir)
	if code != 0 || json.Unmarshal([]byte(out), &stats) != nil || len(stats.Regions) != 3 || stats.Totals[0].HeldRecords != 3*n {
		t.Fatalf("stats: exit %d\n%s%s", code, out, errOut)
	}
	for _, r := range stats.Regions {
		if r.HeldRecords != n {
			t.Errorf("stats: %s holds %d counter records as a replica, want %d", r.Node, r.HeldRecords, n)
		}
	}
	watchStoreStatus(t, m1)

	// Two of three stopped: no quorum of the metadata; admin reads are partial, exit 3.
	m2.signal(syscall.SIGSTOP)
	m3.signal(syscall.SIGSTOP)
	if !waitFor(30*time.Second, func() bool {
		v, ok := m1.members()
		return ok && !v.reachable(m2.peerID()) && !v.reachable(m3.peerID())
	}) {
		t.Fatal("m1 never found m2 and m3 unreachable")
	}
	out, errOut, code = shardctl("history", "--data-dir", m1.dir, "--timeout", "20s")
	if code != 3 || !strings.Contains(errOut, "partial result") || !strings.Contains(errOut, "possibly stale") || !strings.Contains(errOut, m2.peerID()) ||
		!strings.Contains(errOut, m3.peerID()) || !strings.Contains(out, "counter") {
		t.Errorf("history with two of three stopped: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := shardctl("stats", "--data-dir", m1.dir, "--timeout", "20s"); code != 3 || !strings.Contains(errOut, "partial result") || !strings.Contains(out, "DID NOT ANSWER") {
		t.Errorf("stats with two of three stopped: exit %d\n%s%s", code, out, errOut)
	}
	st, code, errOut = askStoreStatus(m1)
	if code != 3 || st.Complete || len(st.Failed) != 2 || !strings.Contains(errOut, m2.peerID()) {
		t.Errorf("store status with two of three stopped: exit %d %+v\n%s", code, st, errOut)
	}
	m2.signal(syscall.SIGCONT)
	m3.signal(syscall.SIGCONT)

	// A fourth member: the sets move (3 of 4 members hold each shard).
	m4 := c.start("m4", "--join", m1.addr())
	if _, errOut, code := shardctl("health", "--data-dir", m4.dir, "--wait", "60s"); code != 0 {
		t.Fatalf("m4 not ready: %s\n%s", errOut, m4.log.String())
	}
	if !waitFor(60*time.Second, func() bool {
		var code int
		st, code, _ = askStoreStatus(m1)
		recs, finished := st.records()
		return code == 0 && len(st.Members) == 4 && finished > 0 && recs == 3*n && len(st.Moves) == 0 && st.Types[0].Units == st.Types[0].Full
	}) {
		t.Fatalf("the sets never settled on 4 members with %d records: %+v", 3*n, st)
	}
	copied := 0
	for _, m := range st.Members {
		copied += m.RecordsCopied
		if m.MovesStarted < m.MovesFinished {
			t.Errorf("member %s: %d moves started, %d finished", m.Node, m.MovesStarted, m.MovesFinished)
		}
	}
	if copied == 0 {
		t.Errorf("moves finished, no record copied: %+v", st)
	}
	scrapes := []scrape{m1.scrapeMetrics(), m2.scrapeMetrics(), m3.scrapeMetrics(), m4.scrapeMetrics()}
	if f := sumOver(scrapes, "shardmesh_store_moves_finished_total"); f == 0 || sumOver(scrapes, "shardmesh_store_move_records_copied_total") == 0 ||
		sumOver(scrapes, "shardmesh_store_moves_started_total") < f || sumOver(scrapes, "shardmesh_store_moves_in_progress") != 0 {
		t.Errorf("move metrics: finished %v, started %v, copied %v", f, sumOver(scrapes, "shardmesh_store_moves_started_total"), sumOver(scrapes, "shardmesh_store_move_records_copied_total"))
	}
	for _, id := range ids(n) {
		if got := ask(t, cl, "counter", id, "get"); got != "1" {
			t.Errorf("%s = %s after the moves", id, got)
		}
	}
}

// watchStoreStatus runs store status --watch --json, reads two answers and stops it with
// Ctrl-C (exit 0).
func watchStoreStatus(t *testing.T, d *daemon) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "shardctl"), "store", "status", "--watch", "300ms", "--json", "--data-dir", d.dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	for i := range 2 {
		var st storeStatus
		if !lines.Scan() || json.Unmarshal(lines.Bytes(), &st) != nil || len(st.Members) != 3 {
			t.Fatalf("watch answer %d: %q %v\n%s", i, lines.Text(), lines.Err(), errOut.String())
		}
	}
	_ = cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Errorf("store status --watch after Ctrl-C: %v\n%s", err, errOut.String())
	}
}

// TestOldLayoutIsRefusedThenUpgraded: a daemon's store turned back into the layout of the
// releases before replica sets (entity state under st␀TYPE␀ENTITY, no store-layout file)
// is refused at start with what to run; data inspect counts the old keys; after shardctl
// data upgrade the daemon starts and every counter has its value.
func TestOldLayoutIsRefusedThenUpgraded(t *testing.T) {
	c := newCluster(t, "--entity-types", "counter", "--set", "sharding.number-of-shards=10")
	m1 := c.start("m1")
	if _, errOut, code := shardctl("health", "--data-dir", m1.dir, "--wait", "60s"); code != 0 {
		t.Fatalf("m1 not ready: %s\n%s", errOut, m1.log.String())
	}
	cl := client(t, m1)
	const n = 20
	for i, id := range ids(n) {
		if got := ask(t, cl, "counter", id, fmt.Sprintf("inc %d", i+1)); got != fmt.Sprint(i+1) {
			t.Fatalf("%s = %s after inc %d", id, got, i+1)
		}
	}
	cl.Close()
	stop(t, m1)
	toOldLayout(t, m1.dir, n)

	old := c.spawn("m1")
	code, ok := old.wait(60 * time.Second)
	if !ok || code == 0 || !strings.Contains(old.log.String(), "shardctl data upgrade --data-dir") {
		t.Fatalf("a daemon on the old layout: exited %v, code %d\n%s", ok, code, old.log.String())
	}
	out, errOut, code := shardctl("data", "inspect", "--data-dir", m1.dir)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d entity states are in the layout before replica sets", n)) {
		t.Fatalf("inspect of the old layout: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = shardctl("data", "upgrade", "--data-dir", m1.dir, "--number-of-shards", "10")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("moved %d entity states of counter", n)) {
		t.Fatalf("upgrade: exit %d\n%s%s", code, out, errOut)
	}

	m1 = c.start("m1")
	if _, errOut, code := shardctl("health", "--data-dir", m1.dir, "--wait", "60s"); code != 0 {
		t.Fatalf("m1 not ready after the upgrade: %s\n%s", errOut, m1.log.String())
	}
	cl = client(t, m1)
	for i, id := range ids(n) {
		if got := ask(t, cl, "counter", id, "get"); got != fmt.Sprint(i+1) {
			t.Errorf("%s = %s after the upgrade, want %d", id, got, i+1)
		}
	}
	// Its metadata (the coordinator's terms, the shards' replica sets) founded the group.
	if _, err := os.Stat(filepath.Join(m1.dir, datadir.MetaSeedFile)); !os.IsNotExist(err) {
		t.Errorf("%s is still there after the upgrade: %v", datadir.MetaSeedFile, err)
	}
}

// toOldLayout rewrites the entity state keys of the stopped member's store in dir to the
// layout before replica sets, as a release of then left them: no metadata group, no layout
// file.
func toOldLayout(t *testing.T, dir string, want int) {
	t.Helper()
	l, err := remember.OpenLocal(datadir.StorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	prefix := datadir.Prefix(datadir.FamilyState)
	moved, err := l.Rekey(prefix, func(key string) (string, bool) {
		if _, old := node.OldStateKey(key); old {
			return "", false
		}
		parts := strings.SplitN(strings.TrimPrefix(key, prefix), datadir.Sep, 3) // TYPE, SHARD, ENTITY
		if len(parts) != 3 {
			return "", false
		}
		return datadir.Key(datadir.FamilyState, parts[0], parts[2]), true
	}, nil)
	if err == nil {
		err = l.ForgetMetaGroup() // those releases had no metadata group
	}
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil || moved != want {
		t.Fatalf("to the old layout: moved %d of %d: %v", moved, want, err)
	}
	if err := os.Remove(filepath.Join(dir, datadir.LayoutFile)); err != nil {
		t.Fatal(err)
	}
}
