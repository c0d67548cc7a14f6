package passivation

import (
	"math"
	"testing"
)

func TestHillClimber(t *testing.T) {
	h := newHillClimber(HillClimbingSettings{AdjustMultiplier: 1, InitialStep: 0.0625, RestartThreshold: 0.05, StepDecay: 0.98}, 10)
	period := func(active int) float64 {
		for i := range 10 {
			if got := h.adjustment(); got != 0 {
				t.Fatalf("adjustment %v before the period ended", got)
			}
			h.record(i < active)
		}
		return h.adjustment()
	}
	steps := []struct {
		active int
		want   float64
		why    string
	}{
		{5, -0.0625, "the first step shrinks the window"},
		{5, -0.0625, "the rate held: keep going (after a restart, at the initial step)"},
		{4, 0.0625 * 0.98, "the rate fell: turn around, with the decayed step"},
		{4, 0.0625, "the fall of 0.1 restarted climbing with the initial step, upwards"},
		{4, 0.0625 * 0.98, "held again: same direction, decayed"},
		{4, 0.0625 * 0.98 * 0.98, "and decaying further"},
	}
	for i, s := range steps {
		if got := period(s.active); math.Abs(got-s.want) > 1e-12 {
			t.Fatalf("period %d: adjustment %v, want %v (%s)", i+1, got, s.want, s.why)
		}
	}
	h.setLimit(20) // a bigger share: longer periods
	for range 19 {
		h.record(true)
	}
	if h.adjustment() != 0 {
		t.Fatal("adjusted before 20 accesses with a limit of 20")
	}
	h.record(true)
	if h.adjustment() == 0 {
		t.Fatal("no adjustment after 20 accesses with a limit of 20")
	}
}
