package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/passivation"
)

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sharding.NumberOfShards != 1000 || c.Membership.FailureDetector.Threshold != 8 ||
		c.Membership.SplitBrainResolver.StableAfter != 20*time.Second || c.Membership.SplitBrainResolver.ActiveStrategy != membership.KeepMajority {
		t.Fatalf("defaults differ from reference.conf: %+v", c)
	}
	if c.Membership.JoinChecks["sharding.number-of-shards"] != "1000" {
		t.Fatalf("join checks: %v", c.Membership.JoinChecks)
	}
}

func TestYAMLAndTOMLAgree(t *testing.T) {
	y := write(t, "c.yaml", `
data-dir: /var/lib/sm
roles: [backend, web]
cluster:
  min-nr-of-members: 3
  role:
    backend:
      min-nr-of-members: 2
  failure-detector:
    threshold: 10
    acceptable-heartbeat-pause: 5 s
  split-brain-resolver:
    active-strategy: static-quorum
    stable-after: 7s
    static-quorum:
      quorum-size: 2
sharding:
  number-of-shards: 300
`)
	tm := write(t, "c.toml", `
data-dir = "/var/lib/sm"
roles = ["backend", "web"]
[cluster]
min-nr-of-members = 3
[cluster.role.backend]
min-nr-of-members = 2
[cluster.failure-detector]
threshold = 10
acceptable-heartbeat-pause = "5 s"
[cluster.split-brain-resolver]
active-strategy = "static-quorum"
stable-after = "7s"
[cluster.split-brain-resolver.static-quorum]
quorum-size = 2
[sharding]
number-of-shards = 300
`)
	for _, f := range []string{y, tm} {
		c, err := Load(Sources{File: f})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		m := c.Membership
		if c.Node.DataDir != "/var/lib/sm" || strings.Join(c.Node.Roles, ",") != "backend,web" || m.MinNrOfMembers != 3 ||
			m.RoleMinNrOfMembers["backend"] != 2 || m.FailureDetector.Threshold != 10 || m.FailureDetector.AcceptableHeartbeatPause != 5*time.Second ||
			m.SplitBrainResolver.ActiveStrategy != membership.StaticQuorum || m.SplitBrainResolver.StableAfter != 7*time.Second ||
			m.SplitBrainResolver.QuorumSize != 2 || c.Sharding.NumberOfShards != 300 {
			t.Errorf("%s: %+v", f, c)
		}
	}
}

func TestPrecedenceFileEnvFlag(t *testing.T) {
	f := write(t, "c.yaml", "sharding:\n  number-of-shards: 10\ncluster:\n  split-brain-resolver:\n    stable-after: 9s\n")
	env := map[string]string{"SHARDMESH_SHARDING_NUMBER_OF_SHARDS": "20", "SHARDMESH_LOG_LEVEL": "debug"}
	c, err := Load(Sources{
		File:      f,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Flags:     []string{"sharding.number-of-shards=30"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sharding.NumberOfShards != 30 || c.Node.LogLevel != "debug" || c.Membership.SplitBrainResolver.StableAfter != 9*time.Second {
		t.Fatalf("precedence: %+v", c)
	}
}

func TestErrorsNameKeyValueSourceAndAllowed(t *testing.T) {
	f := write(t, "bad.yaml", `
cluster:
  failure-detektor:
    threshold: 8
  split-brain-resolver:
    active-strategy: keep-minority
    stable-after: 20
sharding:
  number-of-shards: 0
nonsense: 1
`)
	_, err := Load(Sources{File: f})
	if err == nil {
		t.Fatal("bad config accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`unknown key "cluster.failure-detektor"`, `did you mean "cluster.failure-detector"?`,
		`cluster.split-brain-resolver.active-strategy = "keep-minority"`, "one of keep-majority, lease-majority, static-quorum, keep-oldest, down-all, off",
		`cluster.split-brain-resolver.stable-after = 20`, "a duration with a unit",
		"sharding.number-of-shards = 0", "an integer from 1 to 1048576",
		`unknown key "nonsense"`, "`sharddaemon config` lists every key", f,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	_, err = Load(Sources{Flags: []string{"cluster.gossip-interval=fast"}})
	if err == nil || !strings.Contains(err.Error(), `cluster.gossip-interval = "fast" (flag)`) {
		t.Errorf("flag error = %v", err)
	}
	_, err = Load(Sources{LookupEnv: func(k string) (string, bool) { return "x", k == "SHARDMESH_CLUSTER_MIN_NR_OF_MEMBERS" }})
	if err == nil || !strings.Contains(err.Error(), "environment SHARDMESH_CLUSTER_MIN_NR_OF_MEMBERS") {
		t.Errorf("env error = %v", err)
	}
	if _, err := Load(Sources{File: write(t, "c.ini", "x=1")}); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("ini: %v", err)
	}
	if _, err := Load(Sources{Flags: []string{"cluster.split-brain-resolver.active-strategy=static-quorum"}}); err == nil ||
		!strings.Contains(err.Error(), "quorum-size") {
		t.Errorf("static-quorum without quorum-size: %v", err)
	}
}

func TestEveryKeyHasUsageAndDistinctEnv(t *testing.T) {
	seen := map[string]string{}
	for _, k := range Schema {
		if k.Usage == "" {
			t.Errorf("%s has no usage", k.Path)
		}
		if other, ok := seen[k.Env()]; ok {
			t.Errorf("%s and %s share %s", k.Path, other, k.Env())
		}
		seen[k.Env()] = k.Path
	}
}

// TestPassivation: the sharding.passivation block of a file, overridden key by key from the
// environment and flags, becomes the settings package passivation parses; its errors name
// the full key.
func TestPassivation(t *testing.T) {
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sharding.Passivation; got.Strategy != "default-idle-strategy" || got.Idle.Timeout != 120*time.Second || got.LimitEnabled() {
		t.Fatalf("default passivation: %v", got)
	}

	f := write(t, "p.yaml", `
sharding:
  passivation:
    strategy: bounded
    bounded:
      active-entity-limit: 500
      replacement:
        policy: least-recently-used
      idle-entity:
        timeout: 30s
`)
	c, err = Load(Sources{File: f})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sharding.Passivation; got.Strategy != "bounded" || got.ActiveEntityLimit != 500 ||
		got.Replacement.Policy != passivation.LeastRecentlyUsed || got.Idle.Timeout != 30*time.Second {
		t.Fatalf("file passivation: %v", got)
	}

	env := func(k string) (string, bool) {
		return "45s", k == "SHARDMESH_SHARDING_PASSIVATION_DEFAULT_IDLE_STRATEGY_IDLE_ENTITY_TIMEOUT"
	}
	c, err = Load(Sources{File: f, LookupEnv: env, Flags: []string{
		"sharding.passivation.bounded.active-entity-limit=20",
		"sharding.passivation.strategy=default-idle-strategy",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sharding.Passivation; got.Strategy != "default-idle-strategy" || got.Idle.Timeout != 45*time.Second {
		t.Fatalf("overridden passivation: %v", got)
	}
	c, err = Load(Sources{File: f, Flags: []string{"sharding.passivation.bounded.active-entity-limit=20"}})
	if err != nil || c.Sharding.Passivation.ActiveEntityLimit != 20 {
		t.Fatalf("flag over the file's limit: %v %v", c.Sharding.Passivation, err)
	}
	c, err = Load(Sources{Flags: []string{"sharding.passivation.strategy=none"}})
	if err != nil || c.Sharding.Passivation.Enabled() {
		t.Fatalf("strategy none: %v %v", c.Sharding.Passivation, err)
	}

	for flag, want := range map[string]string{
		"sharding.passivation.strategy=bounded":                          `sharding.passivation.strategy = "bounded"`,
		"sharding.passivation.default-strategy.active-entity-limit=lots": `sharding.passivation.default-strategy.active-entity-limit = "lots"`,
		"sharding.passivation.default-strategy.idel-entity.timeout=5s":   `sharding.passivation.default-strategy.idel-entity`,
	} {
		if _, err := Load(Sources{Flags: []string{flag}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: error %v, want it to name %s", flag, err, want)
		}
	}
}

func TestJoinNeedsAPeerID(t *testing.T) {
	_, err := Load(Sources{Flags: []string{"data-dir=/x", "join=/ip4/127.0.0.1/tcp/4001,/ip4/127.0.0.1/tcp/4002/p2p/12D3KooWJj2DY3nGiJfExXY3qJsk2KXm2LqJpSFNCrzxzsteCcLB,10.0.0.1:4001"}})
	if err == nil {
		t.Fatal("join addresses without /p2p/ accepted")
	}
	msg := err.Error()
	if strings.Count(msg, "ending in /p2p/<peer id>") != 2 || !strings.Contains(msg, `join = "/ip4/127.0.0.1/tcp/4001": `) || !strings.Contains(msg, `"10.0.0.1:4001"`) {
		t.Errorf("error %q", msg)
	}
}

// TestPekkoKeysSayWhy: a Pekko sharding key with no meaning here is refused with the reason
// and the page that lists them, not as an unknown key; a block of them by its prefix.
func TestPekkoKeysSayWhy(t *testing.T) {
	for key, want := range map[string]string{
		"sharding.guardian-name=sharding":                                        "no actor hierarchy",
		"sharding.use-dispatcher=x":                                              "Go schedules goroutines itself",
		"sharding.journal-plugin-id=x":                                           "Akka Persistence plugin",
		"sharding.snapshot-plugin-id=x":                                          "Akka Persistence plugin",
		"sharding.state-store-mode=ddata":                                        "one store",
		"sharding.coordinator-singleton.role=x":                                  "cluster-singleton",
		"sharding.distributed-data.durable.keys=x":                               "not DData",
		"sharding.event-sourced-remember-entities-store.max-updates-per-write=1": "event-sourced",
	} {
		_, err := Load(Sources{Flags: []string{key}})
		if err == nil || !strings.Contains(err.Error(), "is Pekko's and has no meaning in shardmesh") || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "docs/configuration.md") {
			t.Errorf("--set %s: %v (want the reason %q)", key, err, want)
		}
	}
	if _, err := Load(Sources{Flags: []string{"sharding.distributed-data.majority-min-cap=3"}}); err != nil {
		t.Errorf("majority-min-cap, a supported key of the block: %v", err)
	}
}

// TestPekkoKeysDocumented: docs/configuration.md names every Pekko key refused here.
func TestPekkoKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range pekkoOnly {
		name := strings.TrimPrefix(k.key, "sharding.")
		if !strings.Contains(string(doc), "`"+name) {
			t.Errorf("docs/configuration.md does not list %s", name)
		}
	}
}
