package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSimClusterRunsInSharddaemon: shardctl sim cluster hands over to the sharddaemon beside
// it, which runs the machines; help and output are under shardctl's name.
func TestSimClusterRunsInSharddaemon(t *testing.T) {
	out, errOut, code := shardctl("sim", "cluster", "--members", "6", "--shards", "20", "--measure", "3s", "--kill", "1",
		"--set", "cluster.split-brain-resolver.stable-after=2s", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"converged_s", "membership_bytes_per_member_per_s", "removed_after_kill_s"} {
		if v, ok := rep[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v", k, rep[k])
		}
	}
	out, _, code = shardctl("sim", "cluster", "--help")
	if code != 0 || !strings.Contains(out, "shardctl sim cluster --members N") {
		t.Errorf("sim cluster --help: exit %d\n%s", code, out)
	}
	if _, errOut, code := shardctl("sim", "cluster"); code != 2 || !strings.Contains(errOut, "shardctl: --members N is required") {
		t.Errorf("sim cluster without --members: exit %d, stderr %q", code, errOut)
	}
}
