package remember

import (
	"strings"
	"testing"
	"time"
)

// TestRequired: the figures of Akka's ReplicatorSpec for calculateMajority.
func TestRequired(t *testing.T) {
	cases := []struct{ minCap, n, plus, want int }{
		{5, 3, 0, 3}, {5, 4, 0, 4}, {5, 5, 0, 5}, {5, 6, 0, 5}, {5, 7, 0, 5},
		{5, 8, 0, 5}, {5, 9, 0, 5}, {5, 10, 0, 6}, {5, 11, 0, 6}, {5, 12, 0, 7},
		{0, 3, 1, 3}, {0, 3, 2, 3}, {0, 5, 1, 4}, {0, 5, 2, 5}, {0, 6, 1, 5},
		{0, 7, 1, 5}, {0, 8, 1, 6}, {0, 8, 2, 7}, {0, 9, 1, 6}, {0, 10, 1, 7},
		{0, 11, 1, 7}, {0, 11, 3, 9},
		{5, 9, 1, 6}, {7, 9, 1, 7}, {10, 9, 1, 9},
		// shardmesh's own edges
		{5, 3, 3, 3}, {5, 20, 3, 14}, {5, 20, 5, 16}, {1, 1, 0, 1}, {5, 0, 3, 1},
		{1, 9, AllMembers, 9}, {AllMembers, 9, 0, 9}, {1, 4, 0, 3},
	}
	for _, c := range cases {
		if got := Required(c.n, c.plus, c.minCap); got != c.want {
			t.Errorf("Required(n=%d, plus=%d, minCap=%d) = %d, want %d", c.n, c.plus, c.minCap, got, c.want)
		}
	}
}

func TestTally(t *testing.T) {
	var tl tally
	if v := tl.decide(2, 3); v != pending {
		t.Errorf("no answers: %v", v)
	}
	tl.ok = 1
	tl.refused = 1
	if v := tl.decide(2, 1); v != pending {
		t.Errorf("1 ok, 1 outstanding of 2: %v", v)
	}
	if v := tl.decide(2, 0); v != failedNow {
		t.Errorf("1 ok, none outstanding of 2: %v", v)
	}
	tl.ok = 2
	if v := tl.decide(2, 0); v != succeeded {
		t.Errorf("2 ok of 2: %v", v)
	}
}

func TestConfigValidate(t *testing.T) {
	var c Config
	err := c.validate()
	for _, field := range []string{"Dir", "Host", "Members"} {
		if err == nil || !strings.Contains(err.Error(), field+": required") {
			t.Errorf("empty config: %v", err)
		}
	}
	c = Config{WriteMajorityPlus: PlusNone, ReadMajorityPlus: AllMembers}
	_ = c.validate()
	mc := c.machine("a")
	if errs := mc.validate(); len(errs) > 0 || mc.WriteMajorityPlus != 0 || mc.ReadMajorityPlus != AllMembers ||
		mc.MajorityMinCap != DefaultMajorityMinCap || mc.Timeout != DefaultTimeout ||
		mc.AntiEntropyInterval != DefaultAntiEntropyInterval || c.Logger == nil {
		t.Errorf("filled: %+v %+v %v", c, mc, errs)
	}
	c = Config{WriteMajorityPlus: -5, MajorityMinCap: -1, Timeout: -time.Second}
	err = c.validate()
	for _, field := range []string{"WriteMajorityPlus", "MajorityMinCap", "Timeout"} {
		if err == nil || !strings.Contains(err.Error(), field+": ") {
			t.Errorf("bad values: %v", err)
		}
	}
}
