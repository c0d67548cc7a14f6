package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/datatool"
)

// TestVerifyAndRebuild: verify passes a sound store; a garbled table makes it fail (exit 1)
// naming the file, and makes inspect fail with the same name and the fix instead of a
// panic; rebuild refuses a sound store and a member of a cluster of one unless --force,
// moves a damaged store aside (kept) and marks it for a refill.
func TestVerifyAndRebuild(t *testing.T) {
	dir := typesData(t)
	out, errOut, code := runAsShardctl(t, "data", "verify", "--data-dir", dir)
	if code != exitOK || !strings.Contains(out, dir+" (member ") || !strings.Contains(out, "): sound: 1 tables") {
		t.Fatalf("verify a sound store: exit %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runAsShardctl(t, "data", "rebuild", "--data-dir", dir); code != exitRefused || !strings.Contains(errOut, "checks out") {
		t.Fatalf("rebuild a sound store: exit %d %q", code, errOut)
	}
	tables, _ := filepath.Glob(filepath.Join(datadir.StorePath(dir), "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table")
	}
	data, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tables[0], data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(tables[0])
	out, errOut, code = runAsShardctl(t, "data", "verify", "--data-dir", dir, "--json")
	var v struct {
		DataDirs []datatool.Verification `json:"data_dirs"`
	}
	if code != exitFailed || json.Unmarshal([]byte(out), &v) != nil || len(v.DataDirs) != 1 || len(v.DataDirs[0].Damaged) != 1 ||
		v.DataDirs[0].Damaged[0].File != name || !strings.Contains(errOut, "data rebuild") {
		t.Fatalf("verify a truncated table: exit %d %q %q", code, out, errOut)
	}
	_, errOut, code = runAsShardctl(t, "data", "inspect", "--data-dir", dir)
	if code != exitFailed || !strings.Contains(errOut, name) || !strings.Contains(errOut, "data rebuild --data-dir "+dir) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("inspect a damaged store: exit %d %q", code, errOut)
	}
	if _, errOut, code := runAsShardctl(t, "data", "rebuild", "--data-dir", dir); code != exitRefused || !strings.Contains(errOut, "cluster of 0") {
		t.Fatalf("rebuild a member of no cluster: exit %d %q", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, datadir.LastClusterFile), []byte("3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runAsShardctl(t, "data", "rebuild", "--data-dir", dir)
	if code != exitOK || !strings.Contains(out, "damaged: "+name) || !strings.Contains(out, "moved the store of "+dir) {
		t.Fatalf("rebuild: exit %d %q %q", code, out, errOut)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, datadir.DamagedPrefix+"*"))
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v", aside)
	}
	if _, err := os.Stat(filepath.Join(aside[0], name)); err != nil {
		t.Fatalf("the damaged store is not kept: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, datadir.RefillFile)); err != nil || !strings.Contains(string(b), name) {
		t.Fatalf("refill marker: %q %v", b, err)
	}
	out, errOut, code = runAsShardctl(t, "data", "verify", "--data-dir", dir)
	if code != exitOK || !strings.Contains(out, "no store") || !strings.Contains(out, "refills from its peers") || !strings.Contains(out, aside[0]) {
		t.Fatalf("verify after the rebuild: exit %d %q %q", code, out, errOut)
	}
}
