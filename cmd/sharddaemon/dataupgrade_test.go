package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/datatool"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// oldLayoutData is a store as a release before replica sets left it: entity states under
// st␀TYPE␀ENTITY (values, a tombstone, a fence-floor-only key, an id with a non-ASCII
// character), remembered entities already under their shards, metadata, and no
// store-layout file.
func oldLayoutData(t *testing.T, n int) string {
	var calls [][]remember.Write // of at most 1,000 writes: each call is one store round
	write := func(w remember.Write) {
		if len(calls) == 0 || len(calls[len(calls)-1]) == 1000 {
			calls = append(calls, nil)
		}
		calls[len(calls)-1] = append(calls[len(calls)-1], w)
	}
	for _, typ := range []string{"counter", "register"} {
		for i := range n {
			write(remember.Write{Key: fmt.Sprintf("st\x00%s\x00e%d", typ, i), Value: []byte(fmt.Sprint(i)), Epoch: 5})
		}
		write(remember.Write{Key: "re\x00" + typ + "\x003\x00e3"})
		write(remember.Write{Key: "st\x00" + typ + "\x00ü-é"})
	}
	write(remember.Write{Key: "ct\x00counter", Value: []byte("7")})
	calls = append(calls, []remember.Write{{Key: "st\x00counter\x00e1", Delete: true, Epoch: 5}})
	return testDataDir(t, calls, []string{"st\x00register\x00never-saved"})
}

// TestDataUpgrade: on a real Badger store of the old layout, a dry run counts and changes
// nothing; the upgrade moves every entity state — value, version, tombstone, fence floor —
// under the shard Akka's extractor gives with the configured number-of-shards, with
// progress, leaves every other key alone and writes the layout file; run again it moves
// nothing. inspect shows the units held and no old keys left. A daemon holding the
// directory refuses it (exit 4).
func TestDataUpgrade(t *testing.T) {
	const n = 12000 // more than one commit of Rekey
	dir := oldLayoutData(t, n)
	before := snapshot(t, dir)
	found := 2*(n+1) + 1

	out, errOut, code := runAsShardctl(t, "data", "upgrade", "--data-dir", dir, "--number-of-shards", "10", "--dry-run", "--json")
	var dry struct {
		DataDirs []datatool.UpgradeResult `json:"data_dirs"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &dry) != nil || dry.DataDirs[0].Found != found || dry.DataDirs[0].Moved != 0 ||
		strings.Join(dry.DataDirs[0].Types, ",") != "counter,register" {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if !maps.Equal(snapshot(t, dir), before) {
		t.Fatal("the dry run changed the store")
	}
	if _, err := os.Stat(filepath.Join(dir, datadir.LayoutFile)); err == nil {
		t.Fatal("the dry run wrote the layout file")
	}

	// Held by a daemon: refused, nothing changes.
	lock, err := os.OpenFile(filepath.Join(dir, datadir.LockFile), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runAsShardctl(t, "data", "upgrade", "--data-dir", dir, "--number-of-shards", "10"); code != exitRefused || !strings.Contains(errOut, "held by a running sharddaemon") {
		t.Errorf("held directory: exit %d %s", code, errOut)
	}
	lock.Close()
	if !maps.Equal(snapshot(t, dir), before) {
		t.Fatal("a refused upgrade changed the store")
	}

	// The number of shards from the daemon's configuration file.
	cfg := filepath.Join(t.TempDir(), "shardmesh.yaml")
	if err := os.WriteFile(cfg, []byte("sharding:\n  number-of-shards: 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runAsShardctl(t, "data", "upgrade", "--data-dir", dir, "--config", cfg)
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("moved %d entity states of counter, register under their shards (akka's extractor, number-of-shards 10); store layout 2", found)) ||
		!strings.Contains(errOut, fmt.Sprintf("moved 10000 of %d entity states", found)) {
		t.Fatalf("upgrade: exit %d\n%s%s", code, out, errOut)
	}
	after := withoutBytes(snapshot(t, dir)) // the keys are longer by their shards
	ex, err := shard.NewHashCodeExtractor(10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for k, v := range before {
		if typ, ok := node.OldStateKey(k); ok {
			e := shard.EntityID(strings.TrimPrefix(k, "st\x00"+typ+"\x00"))
			k = node.StateKey(typ, ex.ShardID(e), e)
		}
		want[k] = v
	}
	want = withoutBytes(want)
	if !maps.Equal(after, want) {
		for k, v := range want {
			if after[k] != v {
				t.Errorf("%q: %q after the upgrade, want %q", k, after[k], v)
				break
			}
		}
		t.Fatalf("after the upgrade: %d keys, want %d", len(after), len(want))
	}
	if b, err := os.ReadFile(filepath.Join(dir, datadir.LayoutFile)); err != nil || string(b) != "2\n" {
		t.Errorf("layout file: %q %v", b, err)
	}

	out, errOut, code = runAsShardctl(t, "data", "upgrade", "--data-dir", dir, "--number-of-shards", "10")
	if code != exitOK || !strings.Contains(out, "nothing to move; store layout 2") || !maps.Equal(withoutBytes(snapshot(t, dir)), after) {
		t.Errorf("second upgrade: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = runAsShardctl(t, "data", "inspect", "--data-dir", dir, "--units", "--json")
	var inv struct {
		DataDirs []datatool.Inventory `json:"data_dirs"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &inv) != nil {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	d := inv.DataDirs[0]
	if d.Layout != 2 || len(d.Types) != 2 || d.Types[0].OldLayoutStates != 0 || d.Types[0].Units != 10 || len(d.Units) != 20 {
		t.Errorf("inspect after the upgrade: %+v", d)
	}
	records := 0
	for _, u := range d.Units {
		records += u.Records + u.Tombstones + u.FenceOnly
	}
	if records != found+2 { // the entity states and the two remembered entities
		t.Errorf("units hold %d keys, want %d", records, found+2)
	}
}

// TestDataUpgradeBadInput: a newer layout file and a bad number of shards are bad input;
// inspect still shows a store of a newer layout.
func TestDataUpgradeBadInput(t *testing.T) {
	dir := oldLayoutData(t, 3)
	if _, errOut, code := runAsShardctl(t, "data", "upgrade", "--data-dir", dir, "--number-of-shards", "0"); code != exitUsage || !strings.Contains(errOut, "number-of-shards") {
		t.Errorf("--number-of-shards 0: exit %d %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, datadir.LayoutFile), []byte("3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runAsShardctl(t, "data", "upgrade", "--data-dir", dir); code != exitUsage || !strings.Contains(errOut, "newer than this release's 2") {
		t.Errorf("newer layout: exit %d %s", code, errOut)
	}
	if out, errOut, code := runAsShardctl(t, "data", "inspect", "--data-dir", dir); code != exitOK || !strings.Contains(out, "store layout 3") {
		t.Errorf("inspect of a newer layout: exit %d\n%s%s", code, out, errOut)
	}
}

// withoutBytes drops the sizes from a snapshot's entries.
func withoutBytes(snap map[string]string) map[string]string {
	out := make(map[string]string, len(snap))
	for k, v := range snap {
		out[k], _, _ = strings.Cut(v, " bytes=")
	}
	return out
}
