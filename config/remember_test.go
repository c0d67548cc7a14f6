package config

import (
	"strings"
	"testing"
	"time"
)

// TestAdaptiveRecoveryKeys: entity-recovery-strategy = adaptive and its keys load from a
// file; rates out of order are refused naming the keys.
func TestAdaptiveRecoveryKeys(t *testing.T) {
	c, err := Load(Sources{File: write(t, "c.yaml", `
sharding:
  entity-recovery-strategy: adaptive
  entity-recovery-adaptive-strategy:
    initial-rate: 250
    max-rate: 5000
    min-rate: 5
    target-latency: 50ms
    adjust-interval: 1s
`)})
	if err != nil {
		t.Fatal(err)
	}
	want := Adaptive{InitialRate: 250, MaxRate: 5000, MinRate: 5, TargetLatency: 50 * time.Millisecond, AdjustInterval: time.Second}
	if r := c.Sharding.Remember; r.RecoveryStrategy != "adaptive" || r.Adaptive != want {
		t.Fatalf("loaded %q %+v, want adaptive %+v", r.RecoveryStrategy, r.Adaptive, want)
	}
	if d := DefaultRemember().Adaptive; d.Validate() != nil || d.InitialRate != 1000 || d.TargetLatency != 200*time.Millisecond {
		t.Fatalf("defaults %+v: %v", d, d.Validate())
	}
	for flags, msg := range map[string]string{
		"sharding.entity-recovery-adaptive-strategy.min-rate=200000":   "min-rate = 200000 is above",
		"sharding.entity-recovery-adaptive-strategy.max-rate=100":      "initial-rate = 1000 is outside",
		"sharding.entity-recovery-adaptive-strategy.initial-rate=0":    "initial-rate = \"0\"",
		"sharding.entity-recovery-strategy=fast":                       "one of all, constant, adaptive",
		"sharding.entity-recovery-adaptive-strategy.target-latency=0s": "target-latency",
	} {
		_, err := Load(Sources{Flags: []string{flags}})
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("--set %s: %v (want it to say %q)", flags, err, msg)
		}
	}
}
