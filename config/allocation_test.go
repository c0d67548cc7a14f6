package config

import (
	"strings"
	"testing"
)

func TestAllocationStrategyKey(t *testing.T) {
	for _, name := range []string{"least-shard", "consistent-hashing", "external"} {
		c, err := Load(Sources{Flags: []string{"sharding.allocation-strategy=" + name}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Sharding.AllocationStrategy != name {
			t.Errorf("allocation-strategy = %q, want %q", c.Sharding.AllocationStrategy, name)
		}
	}
	_, err := Load(Sources{Flags: []string{"sharding.allocation-strategy=externel"}})
	if err == nil || !strings.Contains(err.Error(), `sharding.allocation-strategy = "externel"`) ||
		!strings.Contains(err.Error(), "one of least-shard, consistent-hashing, external") {
		t.Errorf("misspelt strategy: %v", err)
	}
}
