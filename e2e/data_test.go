package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/admin"
)

// dataFlags: two durable types that remember their entities, a few shards.
var dataFlags = []string{
	"--entity-types", "counter,register",
	"--sharding.remember-entities=true",
	"--set", "sharding.number-of-shards=10",
	"--set", "cluster.split-brain-resolver.stable-after=2s",
}

// typeData is one type's row of shardctl data inspect --json.
type typeData struct {
	EntityType         string `json:"entity_type"`
	RememberedShards   int    `json:"remembered_shards"`
	RememberedEntities int    `json:"remembered_entities"`
	EntityStates       int    `json:"entity_states"`
	Tombstones         int    `json:"tombstones"`
	FenceOnly          int    `json:"fence_only"`
	Keys               int    `json:"keys"`
	Bytes              int64  `json:"bytes"`
}

// inspectData runs shardctl data inspect on dirs and returns each directory's types by name.
func inspectData(t *testing.T, dirs ...string) []map[string]typeData {
	t.Helper()
	args := []string{"data", "inspect", "--json"}
	for _, d := range dirs {
		args = append(args, "--data-dir", d)
	}
	out, errOut, code := shardctl(args...)
	var inv struct {
		DataDirs []struct {
			Types []typeData `json:"types"`
		} `json:"data_dirs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &inv) != nil || len(inv.DataDirs) != len(dirs) {
		t.Fatalf("data inspect: exit %d\n%s\n%s", code, out, errOut)
	}
	res := make([]map[string]typeData, len(dirs))
	for i, d := range inv.DataDirs {
		res[i] = map[string]typeData{}
		for _, td := range d.Types {
			res[i][td.EntityType] = td
		}
	}
	return res
}

// ask asks entity id of typ, retrying while the cluster settles, and returns the reply.
func ask(t *testing.T, cl *admin.Client, typ, id, msg string) string {
	t.Helper()
	var last error
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		reply, err := cl.Ask(ctx, typ, id, []byte(msg))
		cancel()
		if err == nil {
			return string(reply)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ask %s %s %s: %v", typ, id, msg, last)
	return ""
}

// liveEntities returns the live entities of each type across the cluster, as d's stats say.
func liveEntities(d *daemon) (map[string]int, bool) {
	out, _, code := shardctl("stats", "--json", "--data-dir", d.dir)
	var st struct {
		Totals []struct {
			EntityType string `json:"entity_type"`
			Entities   int    `json:"entities"`
		} `json:"totals"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		return nil, false
	}
	res := map[string]int{}
	for _, tot := range st.Totals {
		res[tot.EntityType] = tot.Entities
	}
	return res, true
}

func startData(t *testing.T, c *cluster) (*daemon, *daemon) {
	t.Helper()
	m1 := c.start("m1")
	m2 := c.start("m2", "--join", m1.addr())
	for _, d := range []*daemon{m1, m2} {
		if _, errOut, code := shardctl("health", "--data-dir", d.dir, "--wait", "15s"); code != 0 {
			t.Fatalf("%s not ready: %s", d.name, errOut)
		}
	}
	return m1, m2
}

// stop stops d gracefully and waits for it to exit 0.
func stop(t *testing.T, d *daemon) {
	t.Helper()
	d.signal(syscall.SIGTERM)
	if code, ok := d.wait(30 * time.Second); !ok || code != 0 {
		t.Fatalf("%s did not stop gracefully: exit %d, exited %v", d.name, code, ok)
	}
}

// TestRemoveInternalData: remove-internal-data refuses while the cluster runs (a daemon
// holds a directory; a member answers), then on the stopped members' directories removes
// exactly the named type, and the cluster starts clean for it while the other type keeps
// its state and its remembered entities.
func TestRemoveInternalData(t *testing.T) {
	start := time.Now()
	c := newCluster(t, dataFlags...)
	m1, m2 := startData(t, c)
	dirs := []string{m1.dir, m2.dir}
	cl := client(t, m1)
	const n = 10
	for i := range n {
		if got := ask(t, cl, "counter", fmt.Sprintf("c%d", i), fmt.Sprintf("inc %d", i+1)); got != fmt.Sprint(i+1) {
			t.Fatalf("counter c%d = %s after inc %d", i, got, i+1)
		}
		if got := ask(t, cl, "register", fmt.Sprintf("r%d", i), fmt.Sprintf("set v-%d", i)); got != fmt.Sprintf("v-%d", i) {
			t.Fatalf("register r%d = %q after set", i, got)
		}
	}

	// Refused while the daemons hold their directories; nothing changes.
	out, errOut, code := shardctl("remove-internal-data", "--data-dir", m1.dir, "--data-dir", m2.dir, "--yes", "--include-state", "counter")
	if code != 4 || !strings.Contains(errOut, "held by a running sharddaemon (pid ") || out != "" {
		t.Fatalf("remove on running daemons: exit %d, stdout %q, stderr %q; want exit 4, refused", code, out, errOut)
	}
	for _, args := range [][]string{
		{"data", "inspect", "--data-dir", m1.dir},
		{"data", "backup", "--data-dir", m2.dir, "--out", filepath.Join(t.TempDir(), "b")},
		{"data", "restore", "--data-dir", m2.dir, "--in", os.Args[0], "--replace"},
	} {
		if out, errOut, code := shardctl(args...); code != 4 || !strings.Contains(errOut, "held by a running sharddaemon") || out != "" {
			t.Errorf("%v on a running daemon: exit %d, stdout %q, stderr %q; want exit 4", args, code, out, errOut)
		}
	}
	if got := ask(t, cl, "counter", "c3", "get"); got != "4" {
		t.Fatalf("c3 = %s after a refused removal, want 4", got)
	}
	// m2 stopped, m1 still running: refused because m1 answers at --node.
	stop(t, m2)
	out, errOut, code = shardctl("remove-internal-data", "--data-dir", m2.dir, "--node", m1.addr(), "--yes", "--include-state", "counter")
	if code != 4 || !strings.Contains(errOut, "member "+m1.peerID()+" answers at "+m1.addr()) || out != "" {
		t.Fatalf("remove while m1 runs: exit %d, stdout %q, stderr %q; want exit 4 naming m1", code, out, errOut)
	}
	cl.Close()
	// The last member is killed: a lone member's graceful leave does not finish (it waits out
	// handoff-timeout; a bug of its own), and a killed member is a stopped member too. Its
	// addrs file stays behind, and nothing answers there any more.
	m1.kill()

	// Stopped: m1's directory holds both types; m2 moved its replicas to m1 before it left
	// (every shard's replica set is {m1} now), so its directory holds none of their records.
	before := inspectData(t, dirs...)
	for _, typ := range []string{"counter", "register"} {
		if td := before[0][typ]; td.RememberedEntities != n || td.EntityStates != n || td.RememberedShards == 0 {
			t.Fatalf("%s before removal: %s: %+v", dirs[0], typ, td)
		}
		if td := before[1][typ]; td.RememberedEntities != 0 || td.EntityStates != 0 {
			t.Fatalf("%s, left gracefully, still holds records: %s: %+v", dirs[1], typ, td)
		}
	}
	dryOut, errOut, code := shardctl("remove-internal-data", "--data-dir", m1.dir, "--data-dir", m2.dir, "--include-state", "--dry-run", "--json", "counter")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errOut)
	}
	var dry, run struct {
		RemovedKeys int `json:"removed_keys"`
		DataDirs    []struct {
			Backup string `json:"backup"`
		} `json:"data_dirs"`
	}
	if err := json.Unmarshal([]byte(dryOut), &dry); err != nil {
		t.Fatal(err)
	}
	want := before[0]["counter"].Keys + before[1]["counter"].Keys
	if dry.RemovedKeys != want {
		t.Errorf("dry run would remove %d keys; inspect counts %d of counter", dry.RemovedKeys, want)
	}
	if got := inspectData(t, dirs...); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("the dry run changed the stores:\n%v\n%v", before, got)
	}
	out, errOut, code = shardctl("remove-internal-data", "--data-dir", m1.dir, "--data-dir", m2.dir, "--include-state", "--yes", "--json", "counter")
	if code != 0 || json.Unmarshal([]byte(out), &run) != nil {
		t.Fatalf("remove: exit %d\n%s\n%s", code, out, errOut)
	}
	if run.RemovedKeys != dry.RemovedKeys || !strings.Contains(errOut, "done: removed") {
		t.Errorf("removed %d keys, the dry run said %d; progress: %s", run.RemovedKeys, dry.RemovedKeys, errOut)
	}
	for _, d := range run.DataDirs {
		if st, err := os.Stat(d.Backup); err != nil || st.Size() == 0 {
			t.Errorf("backup %q: %v", d.Backup, err)
		}
	}
	after := inspectData(t, dirs...)
	for i := range dirs {
		if td, ok := after[i]["counter"]; ok {
			t.Errorf("%s: counter left after removal: %+v", dirs[i], td)
		}
		if after[i]["register"] != before[i]["register"] {
			t.Errorf("%s: register changed: %+v -> %+v", dirs[i], before[i]["register"], after[i]["register"])
		}
	}

	// The cluster starts clean for counter; register restarts its remembered entities and
	// keeps its values.
	m1, _ = startData(t, c)
	var live map[string]int
	if !waitFor(10*time.Second, func() bool {
		var ok bool
		live, ok = liveEntities(m1)
		return ok && live["register"] == n
	}) {
		t.Fatalf("register's remembered entities did not restart: %v", live)
	}
	if live["counter"] != 0 {
		t.Errorf("%d counter entities started after their remembered entities were removed", live["counter"])
	}
	cl = client(t, m1)
	for i := range n {
		if got := ask(t, cl, "counter", fmt.Sprintf("c%d", i), "get"); got != "0" {
			t.Errorf("counter c%d = %s after removal, want 0", i, got)
		}
		if got := ask(t, cl, "register", fmt.Sprintf("r%d", i), "get"); got != fmt.Sprintf("v-%d", i) {
			t.Errorf("register r%d = %q after counter's removal, want v-%d", i, got, i)
		}
	}
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// TestDataCommandsRunInSharddaemon: shardctl links no store; its offline data commands run
// in the sharddaemon beside it, else the one on $PATH, else fail naming what to install.
// (The other data tests run them beside, as installed together.)
func TestDataCommandsRunInSharddaemon(t *testing.T) {
	alone := t.TempDir()
	exe, err := os.ReadFile(filepath.Join(bin, "shardctl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alone, "shardctl"), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(path string) (string, string, int) {
		cmd := exec.Command(filepath.Join(alone, "shardctl"), "data", "inspect", "--data-dir", dir)
		cmd.Env = append(os.Environ(), "PATH="+path)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}
	if out, errOut, code := run(t.TempDir()); code != 1 || out != "" || !strings.Contains(errOut, "runs in sharddaemon") || !strings.Contains(errOut, "install the sharddaemon") {
		t.Errorf("without sharddaemon: exit %d, stdout %q, stderr %q; want exit 1 naming sharddaemon", code, out, errOut)
	}
	if out, errOut, code := run(bin); code != 0 || !strings.Contains(out, dir+": no store yet") {
		t.Errorf("with sharddaemon on $PATH: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Help and bad usage come from sharddaemon, under shardctl's name.
	out, _, code := shardctl("remove-internal-data", "--help")
	if code != 0 || !strings.Contains(out, "shardctl remove-internal-data [command options]") {
		t.Errorf("remove-internal-data --help: exit %d\n%s", code, out)
	}
	if _, errOut, code := shardctl("data", "backup", "--data-dir", dir); code != 2 || errOut != "shardctl: data backup needs --out FILE (or --out - for standard output)\n" {
		t.Errorf("data backup without --out: exit %d, stderr %q", code, errOut)
	}
}
