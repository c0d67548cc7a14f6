package passivation

// hillClimber adapts the admission window's share of the limit by simple hill climbing on
// the active rate (the hit rate): every adjustMultiplier × limit accesses it compares the
// active rate of the last period with the one before and keeps stepping in the same
// direction while the rate does not fall, turning around when it does. Steps decay
// geometrically; a change in active rate of restartThreshold or more restarts climbing with
// the initial step. The first step shrinks the window.
type hillClimber struct {
	settings       HillClimbingSettings
	adjustSize     float64 // accesses per period
	accesses       int
	activeAccesses int
	previousRate   float64
	nextStep       float64
}

func newHillClimber(s HillClimbingSettings, limit int) *hillClimber {
	return &hillClimber{
		settings:   s,
		adjustSize: s.AdjustMultiplier * float64(limit),
		nextStep:   -s.InitialStep,
	}
}

// record counts one access; active tells whether the entity was already active.
func (h *hillClimber) record(active bool) {
	h.accesses++
	if active {
		h.activeAccesses++
	}
}

// setLimit rescales the period to a new per-shard limit; the current period's counts stay.
func (h *hillClimber) setLimit(limit int) {
	h.adjustSize = h.settings.AdjustMultiplier * float64(limit)
}

// due reports whether a period has ended, so that adjustment returns a change.
func (h *hillClimber) due() bool { return float64(h.accesses) >= h.adjustSize }

// adjustment returns the change to apply to the window proportion at the end of a period,
// and 0 otherwise.
func (h *hillClimber) adjustment() float64 {
	if !h.due() {
		return 0
	}
	rate := float64(h.activeAccesses) / float64(h.accesses)
	delta := rate - h.previousRate
	step := h.nextStep
	if delta < 0 {
		step = -step
	}
	direction := 1.0
	if step < 0 {
		direction = -1
	}
	if delta >= h.settings.RestartThreshold || -delta >= h.settings.RestartThreshold {
		h.nextStep = h.settings.InitialStep * direction
	} else {
		h.nextStep = step * h.settings.StepDecay
	}
	h.previousRate = rate
	h.accesses, h.activeAccesses = 0, 0
	return step
}
