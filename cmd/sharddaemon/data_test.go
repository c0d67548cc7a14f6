package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/datatool"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/remember"
)

// testDataDir makes a stopped member's data directory like a daemon leaves it: identity,
// LOCK, and a store written through a real remember.Store (one member), with writes applied
// in order and fence floors set by loading the fenced keys.
func testDataDir(t *testing.T, writes [][]remember.Write, fenced []string) string {
	t.Helper()
	dir := t.TempDir()
	key, err := p2p.CreateIdentity(filepath.Join(dir, datadir.IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, datadir.LockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	h, err := p2p.New(ctx, p2p.Config{Identity: key})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	st, err := remember.Open(ctx, remember.Config{
		Dir: datadir.StorePath(dir), Host: h, Placement: remember.FixedPlacement(remember.NodeID(h.ID().String())),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range writes {
		if err := st.Write(ctx, ws...); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range fenced {
		if _, _, err := st.GetFenced(ctx, k, 9); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// snapshot lists every key of the store in dir with its version and deletion mark.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	l, err := remember.OpenLocal(datadir.StorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := map[string]string{}
	err = l.Entries("", func(e remember.Entry) error {
		out[e.Key] = fmt.Sprintf("%v deleted=%v floor=%d bytes=%d", e.Version, e.Deleted, e.Floor, e.Bytes)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// plannedKeys is the set of keys of store snapshot before that a removal of types must
// take: by each key's own family and type, not by the prefixes the removal scans.
func plannedKeys(before map[string]string, types []string, includeState bool) map[string]bool {
	keys := map[string]bool{}
	for k := range before {
		code, typ, ok := datadir.SplitKey(k)
		f, known := datadir.TypeFamilyOf(code)
		if ok && known && slices.Contains(types, typ) && (f.Internal || includeState) {
			keys[k] = true
		}
	}
	return keys
}

// runAsShardctl runs sharddaemon as shardctl runs its data commands: under shardctl's name.
func runAsShardctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(append([]string{"shardctl"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

// typesData is a store with types whose names are prefixes of each other, tombstones,
// fence-floor-only keys, and a key of no type.
func typesData(t *testing.T) string {
	var first []remember.Write
	for _, typ := range []string{"count", "counter", "count-x"} {
		first = append(first, remember.Write{Key: "rs\x00" + typ + "\x003"})
		for i := range 5 {
			first = append(first,
				remember.Write{Key: fmt.Sprintf("re\x00%s\x003\x00e%d", typ, i)},
				remember.Write{Key: fmt.Sprintf("st\x00%s\x003\x00e%d", typ, i), Value: []byte(fmt.Sprint(i))})
		}
		first = append(first, remember.Write{Key: "re\x00" + typ + "\x003\x00x\x00counter\x00y"})
	}
	first = append(first, remember.Write{Key: "coordinator-notes", Value: []byte("not per type")})
	second := []remember.Write{
		{Key: "re\x00count\x003\x00e0", Delete: true},   // passivated
		{Key: "re\x00counter\x003\x00e1", Delete: true}, // passivated
	}
	return testDataDir(t, [][]remember.Write{first, second}, []string{"st\x00count\x003\x00never-saved", "st\x00counter\x003\x00never-saved"})
}

// TestDryRunIsTheRunsRemovalSet: the dry run changes nothing and reports what the real run
// then removes, and the real run removes exactly the selected keys: none of "counter" or
// "count-x" when "count" is removed, entity state only with --include-state.
func TestDryRunIsTheRunsRemovalSet(t *testing.T) {
	dir := typesData(t)
	for _, includeState := range []bool{false, true} {
		args := []string{"remove-internal-data", "--data-dir", dir, "--json", "count"}
		if includeState {
			args = append(args, "--include-state")
		}
		before := snapshot(t, dir)
		planned := plannedKeys(before, []string{"count"}, includeState)
		out, errOut, code := runAsShardctl(t, append(args, "--dry-run")...)
		if code != exitOK {
			t.Fatalf("dry run: exit %d: %s", code, errOut)
		}
		var dry datatool.Removal
		if err := json.Unmarshal([]byte(out), &dry); err != nil {
			t.Fatalf("dry run JSON: %v\n%s", err, out)
		}
		if !maps.Equal(snapshot(t, dir), before) {
			t.Fatal("the dry run changed the store")
		}
		if !dry.DryRun || dry.RemovedKeys != len(planned) {
			t.Errorf("dry run reports %d keys, the plan selects %d", dry.RemovedKeys, len(planned))
		}
		out, errOut, code = runAsShardctl(t, append(args, "--yes")...)
		if code != exitOK {
			t.Fatalf("run: exit %d: %s", code, errOut)
		}
		var run datatool.Removal
		if err := json.Unmarshal([]byte(out), &run); err != nil {
			t.Fatalf("run JSON: %v\n%s", err, out)
		}
		after := snapshot(t, dir)
		removed := map[string]bool{}
		for k := range before {
			if _, ok := after[k]; !ok {
				removed[k] = true
			} else if after[k] != before[k] {
				t.Errorf("key %q changed: %s -> %s", k, before[k], after[k])
			}
		}
		if !maps.Equal(removed, planned) {
			t.Errorf("include-state=%v: removed %q, planned %q", includeState, slices.Sorted(maps.Keys(removed)), slices.Sorted(maps.Keys(planned)))
		}
		dry.DryRun, run.DryRun = false, false
		dry.DataDirs[0].Backup, dry.DataDirs[0].BackupBytes = run.DataDirs[0].Backup, run.DataDirs[0].BackupBytes
		if d, r := mustJSON(t, dry), mustJSON(t, run); d != r {
			t.Errorf("the dry run said\n%s\nthe run did\n%s", d, r)
		}
		for k := range removed {
			internal := strings.HasPrefix(k, "rs\x00count\x00") || strings.HasPrefix(k, "re\x00count\x00")
			if !internal && (!includeState || !strings.HasPrefix(k, "st\x00count\x00")) {
				t.Errorf("removed %q", k)
			}
		}
		if !includeState && len(removed) != 1+6 {
			t.Errorf("removed %d internal keys of count, want 7 (a shard, 6 entities with a tombstone)", len(removed))
		}
		if includeState && len(removed) != 6 {
			t.Errorf("removed %d state keys of count, want 6 (5 states and a fence floor)", len(removed))
		}
		// The backup it took holds the store as it was before.
		backup := run.DataDirs[0].Backup
		if !strings.HasPrefix(backup, filepath.Join(dir, "backups")+string(filepath.Separator)) {
			t.Fatalf("backup at %q", backup)
		}
		restored := t.TempDir()
		if _, errOut, code := runAsShardctl(t, "data", "restore", "--data-dir", restored, "--in", backup); code != exitOK {
			t.Fatalf("restore: exit %d: %s", code, errOut)
		}
		if got := snapshot(t, restored); !maps.Equal(got, before) {
			t.Errorf("the backup holds %d keys, the store held %d", len(got), len(before))
		}
	}
	// Flags after the types apply; the store directory itself is not a data directory.
	if out, errOut, code := runAsShardctl(t, "remove-internal-data", "count", "--data-dir", dir, "--dry-run"); code != exitOK || !strings.Contains(out, "total: would remove 0 keys") {
		t.Errorf("flags after TYPE: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runAsShardctl(t, "data", "inspect", "--data-dir", datadir.StorePath(dir)); code != exitUsage || !strings.Contains(errOut, "is a store itself") {
		t.Errorf("inspect of the store directory: exit %d %s", code, errOut)
	}
	// Everything of count is gone; counter and count-x keep all of theirs.
	out, _, code := runAsShardctl(t, "data", "inspect", "--data-dir", dir, "--json")
	var inv struct {
		DataDirs []datatool.Inventory `json:"data_dirs"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &inv) != nil {
		t.Fatalf("inspect: exit %d %s", code, out)
	}
	want := []datatool.TypeInventory{
		{EntityType: "count-x", RememberedShards: 1, RememberedEntities: 6, EntityStates: 5, Keys: 12, Units: 1},
		{EntityType: "counter", RememberedShards: 1, RememberedEntities: 5, EntityStates: 5, Tombstones: 1, FenceOnly: 1, Keys: 13, Units: 1},
	}
	got := inv.DataDirs[0].Types
	for i := range got {
		got[i].Bytes = 0
	}
	if !slices.Equal(got, want) {
		t.Errorf("after removing count: %+v, want %+v", got, want)
	}
	// Data not kept per type stays: the coordinator's notes, and the metadata group's record
	// of its voters (rc␀␀, the metadata unit's configuration), which no type's removal touches.
	other := inv.DataDirs[0].Other
	if len(other) != 2 || other[0].Prefix != `"coordinator-notes"` || other[1].Prefix != `"rc"` || other[0].Keys != 1 || other[1].Keys != 1 {
		t.Errorf("other data: %+v, want 1 key of coordinator-notes and 1 of rc (rc␀␀)", other)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRemoveRefuses: a directory whose LOCK or store another process (here: another open
// file) holds, and a member answering at an address of the addrs file or of --node, are
// refused with exit code 4 and a line saying why; nothing changes. A stale address where
// nothing listens does not count. A type with no data is a warning.
func TestRemoveRefuses(t *testing.T) {
	dir := typesData(t)
	before := snapshot(t, dir)
	remove := func(extra ...string) (string, string, int) {
		return runAsShardctl(t, append([]string{"remove-internal-data", "--data-dir", dir, "--yes", "--no-backup", "count"}, extra...)...)
	}
	refused := func(what, want string, extra ...string) {
		t.Helper()
		out, errOut, code := remove(extra...)
		if code != exitRefused || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || out != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 4 and one line with %q", what, code, errOut, out, want)
		}
	}
	unchanged := func(what string) {
		t.Helper()
		if !maps.Equal(snapshot(t, dir), before) {
			t.Fatalf("%s: the store changed", what)
		}
	}

	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(lock, "%d\n", 4242)
	refused("LOCK held", "held by a running sharddaemon (pid 4242")
	unchanged("LOCK held")
	lock.Close()

	l, err := remember.OpenLocal(datadir.StorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	refused("store held", "in use by another process")
	l.Close()
	unchanged("store held")

	// A member that answers: a libp2p host, like a daemon's.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key, err := p2p.LoadIdentity(filepath.Join(dir, "identity.key"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := p2p.New(ctx, p2p.Config{Identity: key})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	addr := h.Addrs()[0].String() + "/p2p/" + h.ID().String()
	refused("--node answers", "member "+h.ID().String()+" answers at "+addr+" (from --node)", "--node", addr)
	unchanged("--node answers")
	if err := os.WriteFile(filepath.Join(dir, "addrs"), []byte(addr+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused("addrs answers", "answers at "+addr+" (from "+dir+"/addrs)")
	unchanged("addrs answers")

	// The member is gone; its addrs file stays behind (as after kill -9), and nothing
	// listens at the address.
	h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	stale := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", port, h.ID())
	if err := os.WriteFile(filepath.Join(dir, "addrs"), []byte(stale+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runAsShardctl(t, "remove-internal-data", "--data-dir", dir, "--yes", "--no-backup", "count", "nosuchtype")
	if code != exitOK {
		t.Fatalf("stale addrs: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, `warning: no data of "nosuchtype"`) || !strings.Contains(errOut, "count-x, counter") {
		t.Errorf("no warning about the unknown type: %q", errOut)
	}
	if !strings.Contains(out, "total: removed 7 keys") {
		t.Errorf("output: %s", out)
	}
}

// TestDataUsage: bad usage of the data commands is one line and exit code 2.
func TestDataUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"remove-internal-data", "--data-dir", dir}, "needs TYPE..."},
		{[]string{"remove-internal-data", "counter"}, "needs --data-dir DIR"},
		{[]string{"remove-internal-data", "--data-dir", filepath.Join(dir, "nope"), "--dry-run", "counter"}, "no such directory"},
		{[]string{"remove-internal-data", "--data-dir", dir, "--data-dir", dir + "/", "--dry-run", "counter"}, "named twice"},
		{[]string{"remove-internal-data", "--data-dir", dir, "--dry-run", ""}, "entity type is empty"},
		{[]string{"remove-internal-data", "--data-dir", dir, "--node", "/ip4/127.0.0.1/tcp/1", "--dry-run", "counter"}, "want a member's multiaddr"},
		{[]string{"remove-internal-data", "--data-dir", dir, "--probe-timeout", "0s", "--dry-run", "counter"}, "must be positive"},
		{[]string{"remove-internal-data", "--data-dir", dir, "counter", "--bogus"}, "unknown flag --bogus"},
		{[]string{"data", "bogus"}, `unknown command "bogus" (see 'shardctl data --help')`},
		{[]string{"data", "inspect"}, "needs --data-dir DIR"},
		{[]string{"data", "inspect", "--data-dir", dir, "extra"}, "unexpected argument"},
		{[]string{"data", "backup", "--data-dir", dir}, "needs --out FILE"},
		{[]string{"data", "backup", "--data-dir", dir, "--data-dir", t.TempDir(), "--out", "x"}, "takes one --data-dir"},
		{[]string{"data", "restore", "--data-dir", dir}, "needs --in FILE"},
		{[]string{"data", "restore", "--data-dir", dir, "--in", filepath.Join(dir, "nope")}, "no such file"},
		{[]string{"data", "verify"}, "needs --data-dir DIR"},
		{[]string{"data", "verify", "--data-dir", filepath.Join(dir, "nope")}, "no such directory"},
		{[]string{"data", "rebuild", "--data-dir", dir, "--data-dir", t.TempDir()}, "takes one --data-dir"},
	} {
		out, errOut, code := runAsShardctl(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != exitUsage || len(lines) != 1 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("shardctl %q: exit %d, stderr %q, stdout %q; want exit 2 and one line with %q", c.args, code, errOut, out, c.want)
		}
	}
}

// TestBackupRestore: a backup refuses to overwrite a file; a restore refuses a directory
// that holds a store unless --replace, which moves that store aside.
func TestBackupRestore(t *testing.T) {
	dir := typesData(t)
	before := snapshot(t, dir)
	file := filepath.Join(t.TempDir(), "a.backup")
	out, errOut, code := runAsShardctl(t, "data", "backup", "--data-dir", dir, "--out", file)
	if code != exitOK || !strings.Contains(out, "backed up the store of "+dir) {
		t.Fatalf("backup: exit %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runAsShardctl(t, "data", "backup", "--data-dir", dir, "--out", file); code != exitUsage || !strings.Contains(errOut, "exists already") {
		t.Errorf("backup over a file: exit %d %q", code, errOut)
	}
	if _, _, code := runAsShardctl(t, "remove-internal-data", "--data-dir", dir, "--yes", "--no-backup", "--include-state", "counter"); code != exitOK {
		t.Fatal("remove")
	}
	if _, errOut, code := runAsShardctl(t, "data", "restore", "--data-dir", dir, "--in", file); code != exitRefused || !strings.Contains(errOut, "holds a store already") {
		t.Errorf("restore over a store: exit %d %q", code, errOut)
	}
	out, errOut, code = runAsShardctl(t, "data", "restore", "--data-dir", dir, "--in", file, "--replace", "--json")
	var res datatool.Restored
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("restore --replace: exit %d %q %q", code, out, errOut)
	}
	if got := snapshot(t, dir); !maps.Equal(got, before) || res.Keys != len(before) {
		t.Errorf("restored %d keys (reported %d), had %d", len(got), res.Keys, len(before))
	}
	if _, err := os.Stat(filepath.Join(res.Replaced, "MANIFEST")); err != nil {
		t.Errorf("the replaced store is not at %q: %v", res.Replaced, err)
	}
}

// TestOtherWritersWarning: data written by a member whose directory is not named is a
// warning (anti-entropy would bring it back from there).
func TestOtherWritersWarning(t *testing.T) {
	dir := typesData(t)
	writer, err := p2p.LoadIdentity(filepath.Join(dir, "identity.key"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(writer)
	if err != nil {
		t.Fatal(err)
	}
	// The directory now belongs to another member than the one that wrote its data.
	if err := os.Remove(filepath.Join(dir, "identity.key")); err != nil {
		t.Fatal(err)
	}
	if _, err := p2p.CreateIdentity(filepath.Join(dir, datadir.IdentityFile)); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runAsShardctl(t, "remove-internal-data", "--data-dir", dir, "--dry-run", "counter")
	if code != exitOK || !strings.Contains(errOut, "not named here wrote some of this data: "+id.String()+" (7 keys)") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if _, errOut, _ := runAsShardctl(t, "remove-internal-data", "--data-dir", dir, "--dry-run", "--include-state", "counter"); !strings.Contains(errOut, id.String()+" (12 keys)") { // the fence-only key has no writer
		t.Errorf("with state: stderr %q", errOut)
	}
}
