package check

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// The compose file is loaded by compose-go — the loader docker compose itself uses — which
// validates it against the Compose specification's JSON schema built into the module, so
// nothing is fetched at test time; then the members' settings are checked by the daemon.

func loadCompose(t *testing.T, file string) (*types.Project, error) {
	t.Helper()
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(file),
		ConfigFiles: []types.ConfigFile{{Filename: file}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("shardmesh", true) })
}

func TestComposeFile(t *testing.T) {
	p, err := loadCompose(t, filepath.Join(root, "deploy/compose/compose.yaml"))
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	if len(p.Services) != 3 {
		t.Fatalf("%d services, want 3 members", len(p.Services))
	}
	probePorts := map[string]bool{}
	for name, s := range p.Services {
		cfg := effective(t, "compose service "+name, s.Command)
		alias := strings.Trim(cfg["join-dns"], `"`)
		found := false
		for _, n := range s.Networks {
			if n != nil && slices.Contains(n.Aliases, alias) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: --join-dns %s is not a network alias every member has", name, alias)
		}
		if cfg["cluster.min-nr-of-members"] != "3" {
			t.Errorf("%s: cluster.min-nr-of-members %s, want 3 (the members' count)", name, cfg["cluster.min-nr-of-members"])
		}
		if s.Restart != types.RestartPolicyOnFailure {
			t.Errorf("%s: restart %q, want on-failure: exit 0 (left) must stay stopped", name, s.Restart)
		}
		if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) < 70*time.Second {
			t.Errorf("%s: stop_grace_period must cover a graceful leave (handoff-timeout 60s + 10s)", name)
		}
		if len(s.Volumes) != 1 || s.Volumes[0].Target != strings.Trim(cfg["data-dir"], `"`) {
			t.Errorf("%s: the data directory %s is not on a volume: %+v", name, cfg["data-dir"], s.Volumes)
		}
		for _, port := range s.Ports {
			if !strings.HasSuffix(strings.Trim(cfg["metrics-listen"], `"`), ":"+strconv.Itoa(int(port.Target))) {
				t.Errorf("%s: publishes %d, not the metrics and probes port (%s)", name, port.Target, cfg["metrics-listen"])
			}
			probePorts[port.Published] = true
		}
		if len(s.Secrets) != 1 || "/run/secrets/"+s.Secrets[0].Source != strings.Trim(cfg["cluster-key"], `"`) {
			t.Errorf("%s: --cluster-key %s is not the secret it mounts (%+v)", name, cfg["cluster-key"], s.Secrets)
		}
	}
	if len(probePorts) != 3 {
		t.Errorf("the members publish their probes on %d distinct host ports, want 3", len(probePorts))
	}
}

// TestComposeSchemaCatchesMistakes: the loader above refuses what the specification does.
func TestComposeSchemaCatchesMistakes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "compose.yaml")
	writeFile(t, bad, "services:\n  m1:\n    image: shardmesh\n    restart: sometimes\n    stop_grace_priod: 90s\n")
	if _, err := loadCompose(t, bad); err == nil || !strings.Contains(err.Error(), "stop_grace_priod") {
		t.Fatalf("a misspelled key loaded: %v", err)
	}
}
