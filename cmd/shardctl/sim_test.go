package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/passivation/simulator"
)

// runShardctl runs the app in-process and returns its output, its error output and the
// exit code it asked for.
func runShardctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(append([]string{"shardctl"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

// writeTrace writes a small ARC trace: a hot range used often and a long cold scan.
func writeTrace(t *testing.T) (string, []string) {
	t.Helper()
	var b strings.Builder
	for range 30 {
		b.WriteString("1 50 0 0\n")
	}
	b.WriteString("1000 2000 0 0\n")
	path := filepath.Join(t.TempDir(), "trace.arc")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer func() { _ = f.Close() }()
	ids, err := simulator.ReadTrace(f, simulator.ARC)
	if err != nil {
		t.Fatal(err)
	}
	return path, ids
}

func TestSimPassivationPrintsActiveRates(t *testing.T) {
	path, ids := writeTrace(t)
	stdout, stderr, code := runShardctl(t, "sim", "passivation", "--trace", path, "--format", "arc",
		"--strategy", "lru", "--strategy", "w-tinylfu", "--limit", "40", "--limit", "80", "--regions", "2", "--shards", "4")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, run := range []struct {
		name     string
		settings passivation.Settings
	}{{"lru", passivation.Limited(1, passivation.LRU())}, {"w-tinylfu", passivation.DefaultStrategy()}} {
		for _, limit := range []int{40, 80} {
			stats, err := simulator.Run(simulator.Config{Settings: run.settings.WithActiveEntityLimit(limit), Regions: 2, Shards: 4}, ids)
			if err != nil {
				t.Fatal(err)
			}
			row := fmt.Sprintf("%d  %.2f %%", limit, stats.ActiveRate())
			if !strings.Contains(stdout, row) {
				t.Errorf("output lacks %s at limit %d (%q):\n%s", run.name, limit, row, stdout)
			}
		}
	}
	if !strings.Contains(stdout, "3,500 accesses, 4 shards in 2 regions") {
		t.Errorf("output lacks the trace summary:\n%s", stdout)
	}
}

func TestSimPassivationWithConfigFile(t *testing.T) {
	path, _ := writeTrace(t)
	config := filepath.Join(t.TempDir(), "shardmesh.yaml")
	yaml := `
passivation:
  strategy: small-lfu
  small-lfu:
    active-entity-limit: 30
    replacement:
      policy: least-frequently-used
      least-frequently-used:
        dynamic-aging: on
`
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runShardctl(t, "sim", "passivation", "--trace", path, "--format", "arc",
		"--config", config, "--regions", "1", "--shards", "1", "--json") // the strategy the config selects
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var results []simResult
	if err := json.Unmarshal([]byte(stdout), &results); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if len(results) != 1 || results[0].Strategy != "small-lfu" || results[0].Limit != 30 || !strings.Contains(results[0].Description, "dynamic aging") {
		t.Fatalf("results %+v", results)
	}
}

func TestSimPassivationBadInput(t *testing.T) {
	path, _ := writeTrace(t)
	badConfig := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(badConfig, []byte("passivation:\n  strategy: default-strategy\n  default-strategy:\n    admission:\n      frequency-sketch:\n        counter-bits: 3\n"), 0o600)
	noBlock := filepath.Join(t.TempDir(), "other.yaml")
	_ = os.WriteFile(noBlock, []byte("sharding:\n  number-of-shards: 10\n"), 0o600)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{}, "--trace FILE is required"},
		{[]string{"--trace", path, "--format", "csv"}, `unknown trace format "csv"`},
		{[]string{"--trace", path + ".missing"}, "no such file"},
		{[]string{"--trace", path}, "is not a LIRS block id"}, // an ARC file read as LIRS
		{[]string{"--trace", path, "--format", "arc", "--strategy", "fifo"}, `--strategy "fifo": not a shortcut`},
		{[]string{"--trace", path, "--format", "arc", "--limit", "0"}, "--limit 0: must be a positive number"},
		{[]string{"--trace", path, "--format", "arc", "--regions", "0"}, "--regions 0: must be at least 1"},
		{[]string{"--trace", path, "--format", "arc", "--shards", "-3"}, "--shards -3"},
		{[]string{"--trace", path, "--format", "arc", "--regions", "many"}, `invalid value "many" for flag -regions`},
		{[]string{"--trace", path, "--bogus"}, "unknown flag --bogus"},
		{[]string{"--trace", path, "extra"}, `unexpected argument "extra"`},
		{[]string{"--trace", path, "--format", "arc", "--strategy", "idle", "--limit", "5"}, "--limit has no effect"},
		{[]string{"--trace", path, "--format", "arc", "--config", badConfig},
			"passivation.default-strategy.admission.frequency-sketch.counter-bits = 3: must be 2, 4, 8, 16, 32 or 64"},
		{[]string{"--trace", path, "--format", "arc", "--config", noBlock}, `no top-level "passivation" block`},
	}
	for _, tc := range tests {
		stdout, stderr, code := runShardctl(t, append([]string{"sim", "passivation"}, tc.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: stderr %q, want one line containing %q", tc.args, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("%v: printed %q on bad input", tc.args, stdout)
		}
	}
}

func TestSimPassivationHelpHasAnExample(t *testing.T) {
	stdout, _, code := runShardctl(t, "sim", "passivation", "--help")
	if code != 0 || !strings.Contains(stdout, "shardctl sim passivation --trace gli.trace.gz") {
		t.Fatalf("exit %d, help:\n%s", code, stdout)
	}
}
