package sim

import (
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
)

func TestCapacitySmall(t *testing.T) {
	cfg := membership.DefaultConfig()
	cfg.SplitBrainResolver.StableAfter = 5 * time.Second
	tc := capacityType()
	rep, err := RunCapacity(CapacityOptions{Members: 20, Membership: cfg, Type: &tc, Shards: 100, Kill: 1, Partition: 5, Pause: 20 * time.Second, Seed: 1,
		Progress: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	t.Logf("%+v %+v %+v", rep.Kill, rep.Partition, rep.Pause)
}

func capacityType() engine.TypeConfig {
	return testType("counter", 1)
}
