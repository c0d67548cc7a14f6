package check

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// knownNewerKeys are keys of the unit that systemd-analyze of a version before 254 does not
// know; it ignores them with a warning (RestartSteps, RestartMaxDelaySec: the backoff).
var knownNewerKeys = []string{"RestartSteps", "RestartMaxDelaySec"}

// unitKeys reads the [Service] and [Unit] keys of a unit file, continuation lines joined.
func unitKeys(t *testing.T, text string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	text = strings.ReplaceAll(text, "\\\n", " ")
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "[") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("unit line %q is not key=value", l)
		}
		keys[k] = strings.TrimSpace(v)
	}
	return keys
}

func TestSystemdUnit(t *testing.T) {
	text := string(readFile(t, "deploy/systemd/shardmesh.service"))
	keys := unitKeys(t, text)
	// The restart policy follows the daemon's exit codes: 0 left (no restart), 1 failed and
	// 3 downed or removed (restart), 2 bad usage or configuration (never).
	if keys["Restart"] != "on-failure" {
		t.Errorf("Restart=%s, want on-failure: a member that left (exit 0) stays stopped, 1 and 3 restart", keys["Restart"])
	}
	if !slices.Contains(strings.Fields(keys["RestartPreventExitStatus"]), "2") {
		t.Errorf("RestartPreventExitStatus=%s, want 2: a bad configuration does not heal by restarting", keys["RestartPreventExitStatus"])
	}
	for _, code := range strings.Fields(keys["SuccessExitStatus"]) {
		if code == "1" || code == "3" {
			t.Errorf("SuccessExitStatus lists %s: that exit must restart", code)
		}
	}
	if keys["KillMode"] != "mixed" && keys["KillMode"] != "process" {
		t.Errorf("KillMode=%s: SIGTERM must reach the daemon once (a second signal exits without leaving)", keys["KillMode"])
	}
	// The daemon accepts ExecStart's flags, with systemd's directories put in.
	execStart := strings.Fields(strings.NewReplacer("${STATE_DIRECTORY}", "/var/lib/shardmesh", "${CREDENTIALS_DIRECTORY}", "/run/credentials/shardmesh.service").Replace(keys["ExecStart"]))
	if len(execStart) == 0 || !strings.HasSuffix(execStart[0], "/sharddaemon") {
		t.Fatalf("ExecStart=%s, want sharddaemon", keys["ExecStart"])
	}
	args := slices.Clone(execStart[1:])
	// --config names a file that exists only where the unit is installed: check the others.
	if i := slices.Index(args, "--config"); i >= 0 {
		args = slices.Delete(args, i, i+2)
	}
	cfg := effective(t, "ExecStart", args)
	if cfg["data-dir"] != `"/var/lib/shardmesh"` {
		t.Errorf("--data-dir %s, want the StateDirectory", cfg["data-dir"])
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (apt-get install systemd): the unit was checked for its keys only")
	}
	// verify checks that ExecStart's program exists: point it at a real file, the rest as is.
	dir := t.TempDir()
	unit := filepath.Join(dir, "shardmesh.service")
	writeFile(t, unit, strings.ReplaceAll(text, "/usr/local/bin/sharddaemon", daemon))
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" || slices.ContainsFunc(knownNewerKeys, func(k string) bool {
			return strings.Contains(l, "Unknown key '"+k+"'") || strings.Contains(l, "Unknown key name '"+k+"'")
		}) {
			continue
		}
		t.Errorf("systemd-analyze verify: %s", l)
	}
	if err != nil {
		t.Errorf("systemd-analyze verify: %v", err)
	}
}
