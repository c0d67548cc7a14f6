package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
)

// TestWholeClusterRestoredFromBackups: three daemons' directories backed up, the cluster
// counts on, then every member is restored from its backup and started again. The restored
// stores hold no metadata group (each forgot its replica: the group went on after the
// backups), so the oldest founds it from its metadata and the others merge theirs in
// (the metadata-seed marker, removed once in): the counters answer their values at the
// backup and count on from there.
func TestWholeClusterRestoredFromBackups(t *testing.T) {
	c := newCluster(t, dataFlags...)
	start := func() []*daemon {
		m1 := c.start("m1", "--set", "cluster.min-nr-of-members=3")
		m2 := c.start("m2", "--join", m1.addr(), "--set", "cluster.min-nr-of-members=3")
		m3 := c.start("m3", "--join", m1.addr(), "--set", "cluster.min-nr-of-members=3")
		ms := []*daemon{m1, m2, m3}
		if !waitFor(30*time.Second, func() bool { return allAgree(ms, 3) }) {
			t.Fatal("the cluster did not form")
		}
		return ms
	}
	ms := start()
	const n = 20
	counters := func(d *daemon, msg string, want string) {
		t.Helper()
		cl := client(t, d)
		defer cl.Close()
		for _, id := range ids(n) {
			if got := ask(t, cl, "counter", id, msg); got != want {
				t.Fatalf("%s %s = %s, want %s", msg, id, got, want)
			}
		}
	}
	counters(ms[1], "inc", "1")
	for _, d := range ms {
		d.kill()
	}
	backups := make([]string, len(ms))
	for i, d := range ms {
		backups[i] = filepath.Join(t.TempDir(), "backup")
		if out, errOut, code := shardctl("data", "backup", "--data-dir", d.dir, "--out", backups[i]); code != 0 {
			t.Fatalf("backup of %s: exit %d\n%s%s", d.name, code, out, errOut)
		}
	}

	ms = start()
	counters(ms[2], "inc", "2")
	for _, d := range ms {
		d.kill()
	}
	for i, d := range ms {
		out, errOut, code := shardctl("data", "restore", "--data-dir", d.dir, "--in", backups[i], "--replace")
		if code != 0 {
			t.Fatalf("restore of %s: exit %d\n%s%s", d.name, code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(d.dir, datadir.MetaSeedFile)); err != nil {
			t.Fatalf("restore of %s wrote no %s: %v", d.name, datadir.MetaSeedFile, err)
		}
	}

	ms = start()
	counters(ms[0], "get", "1")
	counters(ms[2], "inc", "2")
	for _, d := range ms {
		if !waitFor(30*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(d.dir, datadir.MetaSeedFile))
			return os.IsNotExist(err)
		}) {
			t.Errorf("%s kept its %s: its metadata never got into the group\n%s", d.name, datadir.MetaSeedFile, d.log.String())
		}
		if !strings.Contains(d.log.String(), "the metadata on this disk is in the metadata group") {
			t.Errorf("%s did not log its seed", d.name)
		}
	}
	if out, errOut, code := shardctl("history", "--data-dir", ms[1].dir); code != 0 || !strings.Contains(out, "counter") {
		t.Errorf("history after the restore: exit %d\n%s%s", code, out, errOut)
	}
}
