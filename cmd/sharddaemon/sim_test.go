package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimClusterUsage: bad input to sim cluster is one line and exit code 2.
func TestSimClusterUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("cluster:\n  voters: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "cluster"}, "--members N is required"},
		{[]string{"sim", "cluster", "--members", "0"}, "between 1 and 100000"},
		{[]string{"sim", "cluster", "--members", "5", "--kill", "5"}, "kill = 5"},
		{[]string{"sim", "cluster", "--members", "5", "--partition", "-1"}, "partition = -1"},
		{[]string{"sim", "cluster", "--members", "5", "--measure", "0s"}, "--measure 0s: must be positive"},
		{[]string{"sim", "cluster", "--members", "5", "--config", bad}, "cluster.voters = 0"},
		{[]string{"sim", "cluster", "--members", "5", "--set", "cluster.voterz=3"}, `unknown key "cluster.voterz"`},
		{[]string{"sim", "cluster", "--members", "5", "extra"}, "unexpected argument"},
		{[]string{"sim", "bogus"}, "unknown command 'sim bogus'"},
	} {
		out, errOut, code := runAsShardctl(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != exitUsage || len(lines) != 1 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("shardctl %q: exit %d, stderr %q, stdout %q; want exit 2 and one line with %q", c.args, code, errOut, out, c.want)
		}
	}
}

// TestSimCluster runs a small capacity simulation with each fault and reads its JSON.
func TestSimCluster(t *testing.T) {
	out, errOut, code := runAsShardctl(t, "sim", "cluster", "--members", "12", "--shards", "40", "--measure", "10s",
		"--set", "cluster.split-brain-resolver.stable-after=3s", "--kill", "1", "--partition", "4", "--pause", "20s", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "every member Up in one view") {
		t.Errorf("no progress on standard error: %q", errOut)
	}
	var rep struct {
		ConvergedS       float64  `json:"converged_s"`
		Bytes            float64  `json:"membership_bytes_per_member_per_s"`
		Msgs             float64  `json:"membership_messages_per_member_per_s"`
		RemovedAfterKill *float64 `json:"removed_after_kill_s"`
		Kill             struct {
			DetectedS float64 `json:"detected_s"`
			BoundS    float64 `json:"bound_s"`
			FailoverS float64 `json:"failover_s"`
		} `json:"kill"`
		Partition struct {
			Kept int `json:"kept_members"`
		} `json:"partition"`
		Pause struct {
			Removed bool   `json:"removed"`
			Outcome string `json:"outcome"`
		} `json:"pause"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	switch {
	case rep.ConvergedS <= 0 || rep.ConvergedS > 10:
		t.Errorf("converged_s = %v", rep.ConvergedS)
	case rep.Msgs < 5 || rep.Bytes < 60*rep.Msgs: // a heartbeat names its sender: > 60 bytes with a real id
		t.Errorf("membership traffic %v messages, %v bytes per member and second", rep.Msgs, rep.Bytes)
	case rep.RemovedAfterKill == nil || *rep.RemovedAfterKill <= rep.Kill.DetectedS || *rep.RemovedAfterKill > rep.Kill.BoundS:
		t.Errorf("removed_after_kill_s = %v, detected %v, bound %v", rep.RemovedAfterKill, rep.Kill.DetectedS, rep.Kill.BoundS)
	case rep.Kill.FailoverS < *rep.RemovedAfterKill:
		t.Errorf("the killed member's shards ran again (%v s) before it was removed (%v s)", rep.Kill.FailoverS, *rep.RemovedAfterKill)
	case rep.Partition.Kept != 7 && rep.Partition.Kept != 4:
		t.Errorf("after the partition of 4 from 7, %d members run", rep.Partition.Kept)
	case !rep.Pause.Removed || !strings.HasPrefix(rep.Pause.Outcome, "stopped"):
		t.Errorf("a member paused 20 s: removed %v, %s", rep.Pause.Removed, rep.Pause.Outcome)
	}

	out, _, code = runAsShardctl(t, "sim", "cluster", "--members", "5", "--shards", "0", "--measure", "5s", "--quiet")
	if code != exitOK || !strings.Contains(out, "5 members, membership alone") || !strings.Contains(out, "membership heartbeat") {
		t.Errorf("the table: exit %d\n%s", code, out)
	}
}
