package remember

import (
	"strings"
	"testing"
	"time"
)

func TestMajority(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 1000: 501} {
		if got := majority(n); got != want {
			t.Errorf("majority(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestJointQuorum: with two sets (a move), a majority of each is needed; one set that
// cannot reach its majority fails the quorum.
func TestJointQuorum(t *testing.T) {
	q := quorum{sets: [][]NodeID{{"a", "b", "c"}, {"b", "c", "d"}}}
	in := func(ids ...NodeID) func(NodeID) bool {
		return func(p NodeID) bool {
			for _, id := range ids {
				if id == p {
					return true
				}
			}
			return false
		}
	}
	none := in()
	cases := []struct {
		ok, open func(NodeID) bool
		want     verdict
	}{
		{in("a", "b"), in("c", "d"), pending}, // the new set has one of two
		{in("a", "b", "d"), none, succeeded},  // a, b of the old; b, d of the new
		{in("b", "c"), none, succeeded},       // b, c are in both
		{in("a", "d"), in("b"), pending},      // b decides both
		{in("a", "d"), none, failedNow},       // one of each
		{in("a", "c"), none, failedNow},       // the new set has c only
	}
	for i, c := range cases {
		if got := q.decide(c.ok, c.open); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
	if got, need, n := q.shortfall(in("a", "d")); got != 1 || need != 2 || n != 3 {
		t.Errorf("shortfall: %d of %d, %d needed", got, n, need)
	}
	if ms := q.members("d"); len(ms) != 4 || ms[0] != "d" {
		t.Errorf("members: %v", ms)
	}
}

func TestConfigValidate(t *testing.T) {
	var c Config
	err := c.validate()
	for _, field := range []string{"Dir", "Host", "Placement"} {
		if err == nil || !strings.Contains(err.Error(), field+": required") {
			t.Errorf("empty config: %v", err)
		}
	}
	c = Config{}
	_ = c.validate()
	mc := c.machine("a")
	if errs := mc.validate(); len(errs) > 0 || mc.Timeout != DefaultTimeout || mc.MaxMoves != DefaultMaxMoves ||
		mc.AntiEntropyInterval != DefaultAntiEntropyInterval || c.Logger == nil || mc.Layout == nil {
		t.Errorf("filled: %+v %+v %v", c, mc, errs)
	}
	c = Config{MaxMoves: -1, Timeout: -time.Second}
	err = c.validate()
	for _, field := range []string{"MaxMoves", "Timeout"} {
		if err == nil || !strings.Contains(err.Error(), field+": ") {
			t.Errorf("bad values: %v", err)
		}
	}
}
