package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/admin"
)

// Storage faults on real daemons (docs/storage.md): a full disk, and each kind of Badger
// file damaged.

// storeHealth is what shardctl health --json says of a member's store and regions.
type storeHealth struct {
	Ready   bool `json:"ready"`
	Regions []struct {
		EntityType  string `json:"entity_type"`
		NoNewShards bool   `json:"no_new_shards"`
	} `json:"regions"`
	Store *struct {
		FreeBytes    uint64 `json:"free_bytes"`
		MinFreeBytes uint64 `json:"min_free_bytes"`
		DiskFull     bool   `json:"disk_full"`
		Refilling    bool   `json:"refilling"`
	} `json:"store"`
	Reasons []string `json:"reasons"`
}

func (d *daemon) health() (storeHealth, bool) {
	out, _, _ := shardctl("health", "--json", "--timeout", "3s", "--data-dir", d.dir)
	var h storeHealth
	return h, json.Unmarshal([]byte(out), &h) == nil && h.Store != nil
}

// askOnce asks once, without retrying.
func askOnce(cl *admin.Client, id, msg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	reply, err := cl.Ask(ctx, "counter", id, []byte(msg))
	return string(reply), err
}

// mountTmpfs mounts a tmpfs of size at dir for the test (root only).
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the full disk is a tmpfs the test mounts: that needs root")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	// Lazily: the cluster's cleanup, which kills the daemon using it, runs after this one.
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

// fillDisk writes zeros to path until the file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}

// TestDiskFullIsAnErrorNotACrash: m3's data directory is a 64 MiB tmpfs, filled to the last
// byte while the cluster runs (it used to die of SIGBUS in Badger's memory-mapped log
// write, and again at every restart, with exit code 2). Now m3 keeps running and reports
// not ready with the reason; saves go on (m3 is one replica of three: a minority of every
// set); with m2's disk full too, saves of the shards whose sets they share fail with an
// error that names a full disk; new shards go to the other members; once the fillers are
// gone m3 is ready again by itself, saves succeed, and every acknowledged increment is
// there.
func TestDiskFullIsAnErrorNotACrash(t *testing.T) {
	c := newCluster(t, "--entity-types", "counter",
		"--set", "sharding.number-of-shards=200",
		"--set", "store.min-free-space=8MiB",
		"--set", "cluster.split-brain-resolver.stable-after=2s")
	mountTmpfs(t, filepath.Join(c.root, "m3"), "64m")
	mountTmpfs(t, filepath.Join(c.root, "m2"), "64m")
	m1 := c.start("m1")
	m2 := c.start("m2", "--join", m1.addr())
	m3 := c.start("m3", "--join", m1.addr())
	for _, d := range []*daemon{m1, m2, m3} {
		if _, errOut, code := shardctl("health", "--data-dir", d.dir, "--wait", "30s"); code != 0 {
			t.Fatalf("%s not ready: %s", d.name, errOut)
		}
	}
	cl := client(t, m1)
	acked := map[string]int{}
	counters := ids(30)
	for _, id := range counters {
		ask(t, cl, "counter", id, "inc")
		acked[id]++
	}

	fillDisk(t, filepath.Join(m3.dir, "filler"))
	var h storeHealth
	if !waitFor(20*time.Second, func() bool {
		var ok bool
		h, ok = m3.health()
		return ok && !h.Ready && h.Store.DiskFull && len(h.Regions) == 1 && h.Regions[0].NoNewShards
	}) {
		t.Fatalf("m3 does not report its full disk: %+v", h)
	}
	if !slices.ContainsFunc(h.Reasons, func(r string) bool {
		return strings.Contains(r, "disk full") && strings.Contains(r, "store.min-free-space 8 MiB")
	}) {
		t.Errorf("health does not say why: %q", h.Reasons)
	}
	// One full disk of three: every save goes on.
	for _, id := range counters[:5] {
		if _, err := askOnce(cl, id, "inc"); err != nil {
			t.Errorf("a save while m3's disk is full: %v; one replica of three stalls nothing", err)
		} else {
			acked[id]++
		}
	}
	// Two of three: a save fails, naming a full disk.
	fillDisk(t, filepath.Join(m2.dir, "filler"))
	refused := map[string]int{}
	if !waitFor(20*time.Second, func() bool { h, ok := m2.health(); return ok && h.Store.DiskFull }) {
		t.Fatal("m2 does not report its full disk")
	}
	for _, id := range counters[5:10] {
		if _, err := askOnce(cl, id, "inc"); err == nil || !strings.Contains(err.Error(), "disk full") ||
			(!strings.Contains(err.Error(), m3.peerID()) && !strings.Contains(err.Error(), m2.peerID())) {
			t.Errorf("a save while m2's and m3's disks are full: %v; want an error naming a full disk", err)
		} else {
			refused[id]++
		}
	}
	if err := os.Remove(filepath.Join(m2.dir, "filler")); err != nil {
		t.Fatal(err)
	}
	// New shards go elsewhere (the asks fail, their shards are allocated all the same).
	elsewhere := 0
	for i := range 12 {
		id := "new-" + strconv.Itoa(i)
		_, _ = askOnce(cl, id, "get")
		out, _, code := shardctl("locate", "--json", "--data-dir", m1.dir, "counter", id)
		var loc struct {
			Allocated bool   `json:"allocated"`
			Home      string `json:"home"`
		}
		if code != 0 && code != 3 || json.Unmarshal([]byte(out), &loc) != nil {
			t.Fatalf("locate %s: exit %d %s", id, code, out)
		}
		switch {
		case loc.Allocated && loc.Home == m3.peerID():
			t.Errorf("new shard of %s allocated to m3, whose disk is full", id)
		case loc.Allocated:
			elsewhere++
		}
	}
	if elsewhere == 0 {
		t.Errorf("no new shard was allocated while m3's disk was full: nothing shown")
	}
	t.Logf("%d new shards allocated while m3's disk was full, none on m3", elsewhere)
	select {
	case <-m3.exited:
		t.Fatalf("m3 exited on a full disk: %v\n%s", m3.exitErr, m3.log.String())
	default:
	}

	if err := os.Remove(filepath.Join(m3.dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := shardctl("health", "--data-dir", m3.dir, "--wait", "30s"); code != 0 {
		t.Fatalf("m3 not ready again once space is back: %s", errOut)
	}
	if !waitFor(10*time.Second, func() bool {
		h, ok := m3.health()
		return ok && !h.Store.DiskFull && len(h.Regions) == 1 && !h.Regions[0].NoNewShards
	}) {
		t.Fatalf("m3's region still takes no new shards: %+v", h)
	}
	// A failed save may have been stored on m1 and m2 (a failed write is not rolled back,
	// and spreads from there): counter 0 may hold the refused increment too.
	for _, id := range counters {
		got, _ := strconv.Atoi(ask(t, cl, "counter", id, "inc"))
		if lo, hi := acked[id]+1, acked[id]+1+refused[id]; got < lo || got > hi {
			t.Errorf("%s = %d after an increment, want %d (or up to %d with the refused ones): an acknowledged increment was lost", id, got, lo, hi)
		}
	}
	log := m3.log.String()
	for _, want := range []string{"disk full: the store refuses writes", "disk space is back"} {
		if !strings.Contains(log, want) {
			t.Errorf("m3's log lacks %q", want)
		}
	}
	if strings.Contains(log, "SIGBUS") || strings.Contains(log, "panic:") || strings.Contains(log, "goroutine ") {
		t.Errorf("m3's log:\n%s", log)
	}
}

// damage is a kind of Badger file, truncated or garbled, and how the member is stopped
// before (SIGKILL leaves the write-ahead memtable, SIGTERM flushes it into a table).
type damage struct {
	kind string // MANIFEST, sst, vlog, mem
	how  string // truncated, garbled
	stop syscall.Signal
	auto bool // started with store.rebuild-damaged=on instead of rebuilt by hand
}

// apply damages the file of its kind in store and returns the file's name.
func (dm damage) apply(t *testing.T, store string) string {
	t.Helper()
	var path string
	if dm.kind == "MANIFEST" {
		path = filepath.Join(store, "MANIFEST")
	} else {
		files, _ := filepath.Glob(filepath.Join(store, "*."+dm.kind))
		slices.Sort(files)
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Size() > 0 {
				path = f
				break
			}
		}
	}
	data, err := os.ReadFile(path)
	if path == "" || err != nil {
		t.Fatalf("no %s file in %s: %v", dm.kind, store, err)
	}
	used := len(bytes.TrimRight(data, "\x00"))
	switch {
	case dm.how == "truncated" && dm.kind == "mem":
		data = data[:used-1] // into the last entry of the log
	case dm.how == "truncated" && dm.kind == "vlog":
		data = data[:10] // into its header: the value log holds no values here (they stay in the tables)
	case dm.how == "truncated":
		data = data[:used/2]
	case dm.kind == "vlog":
		for i := range 8 { // its header: the rest is unused
			data[i] ^= 0xa5
		}
	case dm.kind == "mem":
		for i := 40; i < 100; i++ { // an early entry: the ones after it are what a replay would drop
			data[i] ^= 0xa5
		}
	default:
		for i := used / 2; i < used/2+48 && i < len(data); i++ {
			data[i] ^= 0xa5
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Base(path)
}

// TestDamagedStoreIsRebuiltFromThePeers: for each kind of Badger file, truncated and
// garbled, m3's store is damaged while it is stopped. It refuses to start — exit code 1, one
// log line naming the file and the fix, no panic; shardctl data verify lists the file;
// shardctl data rebuild moves the store aside; started again, m3 refills its replica from
// m1 and m2 before it is ready, every counter keeps every acknowledged increment, and m3's
// replica holds the state of every counter.
func TestDamagedStoreIsRebuiltFromThePeers(t *testing.T) {
	c := newCluster(t, "--entity-types", "counter",
		"--set", "sharding.number-of-shards=20",
		"--set", "cluster.failure-detector.heartbeat-interval=250ms",
		"--set", "cluster.failure-detector.acceptable-heartbeat-pause=1500ms",
		"--set", "cluster.split-brain-resolver.stable-after=1s")
	m1 := c.start("m1", "--set", "cluster.min-nr-of-members=3")
	m2 := c.start("m2", "--join", m1.addr())
	m3 := c.start("m3", "--join", m1.addr())
	ready := func(d *daemon) {
		t.Helper()
		if _, errOut, code := shardctl("health", "--data-dir", d.dir, "--wait", "60s"); code != 0 {
			t.Fatalf("%s not ready: %s\n%s", d.name, errOut, d.log.String())
		}
	}
	for _, d := range []*daemon{m1, m2, m3} {
		ready(d)
	}
	// logged waits for d's log to show what it wrote before it answered ready: the log
	// comes through a pipe, and may trail the answer.
	logged := func(d *daemon, line string) {
		t.Helper()
		if !waitFor(10*time.Second, func() bool { return strings.Contains(d.log.String(), line) }) {
			t.Fatalf("%s did not log %q:\n%s", d.name, line, d.log.String())
		}
	}
	cl := client(t, m1)
	counters := ids(40)
	want := map[string]int{}
	incAll := func() {
		t.Helper()
		for _, id := range counters {
			want[id]++
			if got := ask(t, cl, "counter", id, "inc"); got != strconv.Itoa(want[id]) {
				t.Fatalf("%s = %s, want %d", id, got, want[id])
			}
		}
	}
	incAll()
	cases := []damage{
		{kind: "mem", how: "truncated", stop: syscall.SIGKILL}, {kind: "mem", how: "garbled", stop: syscall.SIGKILL},
		{kind: "sst", how: "truncated", stop: syscall.SIGTERM}, {kind: "sst", how: "garbled", stop: syscall.SIGTERM},
		{kind: "MANIFEST", how: "truncated", stop: syscall.SIGTERM}, {kind: "MANIFEST", how: "garbled", stop: syscall.SIGKILL},
		{kind: "vlog", how: "truncated", stop: syscall.SIGTERM}, {kind: "vlog", how: "garbled", stop: syscall.SIGKILL},
		{kind: "sst", how: "garbled", stop: syscall.SIGTERM, auto: true},
	}
	// held waits until m3 holds every counter's state as a replica: a write is acknowledged
	// by a majority of its replica set, and the third replica may take it a moment later.
	held := func() {
		t.Helper()
		records := -1
		if !waitFor(30*time.Second, func() bool {
			st, code, _ := askStoreStatus(m1)
			for _, m := range st.Members {
				if m.Node == m3.peerID() && len(m.Types) == 1 {
					records = m.Types[0].Records
				}
			}
			return code == 0 && records == len(counters)
		}) {
			t.Fatalf("m3 holds %d counter states as a replica, want %d", records, len(counters))
		}
	}
	for _, dm := range cases {
		t.Logf("--- %s %s (stopped with %v, rebuilt at start: %v)", dm.kind, dm.how, dm.stop, dm.auto)
		held()
		m3.signal(dm.stop)
		if _, ok := m3.wait(60 * time.Second); !ok {
			t.Fatalf("m3 did not stop:\n%s", m3.log.String())
		}
		// The refilled replica of the last round holds every counter's state (after a
		// kill: a graceful stop leaves, and the departure moves its replicas to the others).
		if got := counterStates(t, m3.dir); dm.stop == syscall.SIGKILL && got != len(counters) {
			t.Fatalf("m3's refilled replica holds %d counter states, want %d", got, len(counters))
		}
		file := dm.apply(t, filepath.Join(m3.dir, "store"))
		named := file
		if dm.kind == "MANIFEST" {
			named = "MANIFEST"
		}

		if dm.auto {
			m3 = c.start("m3", "--join", m1.addr(), "--set", "store.rebuild-damaged=on")
			ready(m3)
			logged(m3, "refilled from the peers")
			if log := m3.log.String(); !strings.Contains(log, "moved it aside") || !strings.Contains(log, "refilled from the peers") || !strings.Contains(log, named) {
				t.Fatalf("store.rebuild-damaged did not rebuild:\n%s", log)
			}
			incAll()
			continue
		}
		bad := c.spawn("m3", "--join", m1.addr())
		code, exited := bad.wait(30 * time.Second)
		log := bad.log.String()
		if !exited || code != 1 {
			t.Fatalf("m3 on a store with %s %s: exited %v, code %d\n%s", dm.how, file, exited, code, log)
		}
		var line string
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "cannot start") {
				line = l
			}
		}
		if !strings.Contains(line, "store damaged") || !strings.Contains(line, filepath.Join(m3.dir, "store", named)) ||
			!strings.Contains(line, "shardctl data rebuild --data-dir "+m3.dir) || strings.Contains(log, "panic:") || strings.Contains(log, "goroutine ") {
			t.Fatalf("the start does not fail with one line naming %s and the fix:\n%s", named, log)
		}

		out, _, code := shardctl("data", "verify", "--json", "--data-dir", m3.dir)
		if code != 1 || !strings.Contains(out, fmt.Sprintf("%q", named)) {
			t.Fatalf("data verify: exit %d\n%s", code, out)
		}
		out, errOut, code := shardctl("data", "rebuild", "--data-dir", m3.dir)
		if code != 0 || !strings.Contains(out, "moved the store of "+m3.dir) {
			t.Fatalf("data rebuild: exit %d\n%s\n%s", code, out, errOut)
		}

		m3 = c.start("m3", "--join", m1.addr())
		ready(m3) // refilled: a store that refills is not ready
		logged(m3, "refilled from the peers")
		incAll() // every acknowledged increment is there, through m3's replica too
	}
	// Killed (a graceful stop would move its replicas away first), m3's refilled replica
	// holds every counter's state.
	held()
	m3.kill()
	if _, ok := m3.wait(60 * time.Second); !ok {
		t.Fatal("m3 did not stop after kill -9")
	}
	if got := counterStates(t, m3.dir); got != len(counters) {
		t.Fatalf("m3's refilled replica holds %d counter states, want %d", got, len(counters))
	}
	aside, _ := filepath.Glob(filepath.Join(m3.dir, "store.damaged-*"))
	if len(aside) != len(cases) {
		t.Errorf("damaged stores kept: %d, want %d", len(aside), len(cases))
	}
}

// counterStates counts the counter states in a copy of a stopped member's data directory:
// opening the store to inspect it would flush its write-ahead memtable, which a case after
// it damages.
func counterStates(t *testing.T, dir string) int {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", dir, cp).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v: %s", dir, err, out)
	}
	return inspectData(t, cp)[0]["counter"].EntityStates
}
