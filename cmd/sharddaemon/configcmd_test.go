package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// daemon runs sharddaemon with args and returns stdout, stderr and the exit code.
func daemon(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append([]string{"sharddaemon"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shardmesh.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigCheck(t *testing.T) {
	bad := writeConfig(t, `
data-dir: /var/lib/sm
cluster:
  failure-detektor:
    threshold: 10
  min-nr-of-members: 0
sharding:
  handoff-timeout: 10
entity-types: [counter, countr]
`)
	out, errOut, code := daemon(t, "config", "check", bad)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
	}
	want := []string{
		`unknown key "cluster.failure-detektor" (` + bad + `); did you mean "cluster.failure-detector"?`,
		`cluster.min-nr-of-members = 0 (` + bad + `): an integer from 1`,
		`sharding.handoff-timeout = 10 (` + bad + `): a duration with a unit`,
		`entity-types = "countr" (` + bad + `): unknown built-in type "countr"; did you mean "counter"? (counter, echo, register, stubborn)`,
	}
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d lines, want one per problem (%d):\n%s", len(got), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("line %d: %q\nwant it to start with %q", i+1, got[i], w)
		}
	}
	if !strings.Contains(errOut, "4 problems") {
		t.Errorf("stderr %q, want the count of problems", errOut)
	}
	// The environment does not leak into a check of the file alone.
	t.Setenv("SHARDMESH_SHARDING_NUMBER_OF_SHARDS", "0")
	good := writeConfig(t, "data-dir: /var/lib/sm\nsharding:\n  number-of-shards: 300\n")
	if out, errOut, code := daemon(t, "config", "check", good); code != 0 || !strings.Contains(out, good+": ok") {
		t.Fatalf("a good file: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = daemon(t, "config", "check", bad, "--json")
	var j struct {
		OK       bool     `json:"ok"`
		Problems []string `json:"problems"`
	}
	if code != 2 || json.Unmarshal([]byte(out), &j) != nil || j.OK || len(j.Problems) != 4 {
		t.Fatalf("--json: exit %d, %+v\n%s", code, j, out)
	}
	for _, args := range [][]string{{"config", "check"}, {"config", "check", filepath.Join(t.TempDir(), "missing.yaml")}, {"config", "frob"}} {
		if _, errOut, code := daemon(t, args...); code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, want 2 with one line:\n%s", args, code, errOut)
		}
	}
}

func TestConfigShow(t *testing.T) {
	file := writeConfig(t, "data-dir: /var/lib/sm\nsharding:\n  number-of-shards: 300\n  handoff-timeout: 30s\n")
	t.Setenv("SHARDMESH_LOG_LEVEL", "debug")
	t.Setenv("SHARDMESH_SHARDING_HANDOFF_TIMEOUT", "45s")
	out, errOut, code := daemon(t, "config", "show", "--config", file, "--set", "sharding.number-of-shards=400", "--roles", "a,b", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var settings []struct{ Key, Value, Origin string }
	if err := json.Unmarshal([]byte(out), &settings); err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, s := range settings {
		got[s.Key] = [2]string{s.Value, s.Origin}
	}
	for key, want := range map[string][2]string{
		"data-dir":                  {`"/var/lib/sm"`, file},
		"sharding.number-of-shards": {"400", "flag"},
		"sharding.handoff-timeout":  {"45s", "environment SHARDMESH_SHARDING_HANDOFF_TIMEOUT"},
		"log-level":                 {`"debug"`, "environment SHARDMESH_LOG_LEVEL"},
		"roles":                     {`["a", "b"]`, "flag"},
		"cluster.min-nr-of-members": {"1", "default"},
	} {
		if got[key] != want {
			t.Errorf("%s: %v, want %v", key, got[key], want)
		}
	}
	out, _, code = daemon(t, "config", "show", "--config", file)
	if code != 0 || !strings.Contains(out, "KEY") || !strings.Contains(out, "sharding.number-of-shards") {
		t.Fatalf("table: exit %d\n%s", code, out)
	}
	// Problems instead of a listing, exit code 2.
	out, errOut, code = daemon(t, "config", "show", "--set", "cluster.min-nr-of-members=0")
	if code != 2 || out != "" || !strings.Contains(errOut, "cluster.min-nr-of-members = \"0\" (flag)") {
		t.Fatalf("a bad flag: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}
