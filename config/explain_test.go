package config

import (
	"testing"
)

func TestSettingsShowValuesAndOrigins(t *testing.T) {
	file := write(t, "shardmesh.yaml", `
data-dir: /var/lib/sm
roles: [backend, web]
cluster:
  failure-detector:
    threshold: 10
  role:
    backend:
      min-nr-of-members: 2
sharding:
  number-of-shards: 300
  passivation:
    strategy: default-strategy
`)
	env := map[string]string{"SHARDMESH_SHARDING_HANDOFF_TIMEOUT": "90s", "SHARDMESH_CLUSTER_FAILURE_DETECTOR_THRESHOLD": "11"}
	c, err := Load(Sources{File: file, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Flags: []string{"sharding.number-of-shards=400", "mdns=on"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range c.Settings() {
		if _, dup := got[s.Key]; dup {
			t.Errorf("%s listed twice", s.Key)
		}
		got[s.Key] = s
	}
	want := []Setting{
		{"data-dir", `"/var/lib/sm"`, file},
		{"roles", `["backend", "web"]`, file},
		{"cluster.failure-detector.threshold", "11", "environment SHARDMESH_CLUSTER_FAILURE_DETECTOR_THRESHOLD"},
		{"sharding.handoff-timeout", "1m30s", "environment SHARDMESH_SHARDING_HANDOFF_TIMEOUT"},
		{"sharding.number-of-shards", "400", "flag"},
		{"mdns", "on", "flag"},
		{"cluster.min-nr-of-members", "1", "default"},
		{"cluster.split-brain-resolver.active-strategy", `"keep-majority"`, "default"},
		{"log-level", `"info"`, "default"},
		{"join", "[]", "default"},
		{"sharding.passivation.strategy", `"default-strategy"`, file},
		{"cluster.role.backend.min-nr-of-members", "2", file},
	}
	for _, w := range want {
		if g := got[w.Key]; g != w {
			t.Errorf("%s: got %+v, want %+v", w.Key, g, w)
		}
	}
	for _, k := range Schema {
		if _, ok := got[k.Path]; !ok {
			t.Errorf("key %s not listed", k.Path)
		}
	}
}
