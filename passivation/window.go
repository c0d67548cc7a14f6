package passivation

// The composite strategy (Window-TinyLFU): new entities enter the admission window; an
// entity the window evicts is a candidate for the main area, admitted only if the
// admission filter estimates it more popular than the main area's victim; whichever loses
// is passivated. Without a window, every new entity is a candidate; without a filter, every
// candidate is admitted, which makes a plain limit-based strategy the special case of a
// composite with neither.

// admit offers each candidate unlinked from the window to the main area.
func (p *Policy[K]) admit(candidates []int32, out []K) []K {
	for _, c := range candidates {
		out = p.admitOne(c, out)
	}
	return out
}

// admitOne offers candidate c (linked in no area) to the main area.
func (p *Policy[K]) admitOne(c int32, out []K) []K {
	if p.sketch != nil && p.main.len() >= p.mainLimit {
		cold := p.arena.cold
		if v := p.main.victim(); v != none && p.sketch.frequency(cold[c].hash) <= p.sketch.frequency(cold[v].hash) {
			return p.passivateOne(c, out)
		}
	}
	p.arena.entries[c].where = inMain
	p.moved = p.main.add(c, p.moved[:0])
	return p.passivate(p.moved, out)
}

// passivateOne forgets entry c, linked in no area, and appends its key to out.
func (p *Policy[K]) passivateOne(c int32, out []K) []K {
	out = append(out, p.keys[c])
	if p.idle > 0 {
		p.idleRemove(c)
	}
	p.forget(c)
	return out
}

// adaptWindow applies the optimizer's adjustment, if one is due, moving entities between
// the window and the main area so that each fits its new limit. Nothing is passivated by a
// move in practice (the two limits change by the same amount in opposite directions); an
// entity that still did not fit would be passivated rather than lost.
func (p *Policy[K]) adaptWindow(out []K) []K {
	if p.climber == nil {
		return out
	}
	adj := p.climber.adjustment()
	if adj == 0 {
		return out
	}
	p.proportion = max(p.minProp, min(p.maxProp, p.proportion+adj))
	p.divide()
	es := p.arena.entries
	if adj > 0 { // grow the window: the main area's excess moves to the window
		p.scratch = p.window.setLimit(p.windowLimit, p.scratch[:0])
		out = p.passivate(p.scratch, out)
		p.moved = p.main.setLimit(p.mainLimit, p.moved[:0])
		for _, m := range p.moved {
			es[m].where = inWindow
			p.scratch = p.window.add(m, p.scratch[:0])
			out = p.passivate(p.scratch, out)
		}
		return out
	}
	// shrink the window: its excess moves to the main area, unfiltered
	p.scratch = p.main.setLimit(p.mainLimit, p.scratch[:0])
	out = p.passivate(p.scratch, out)
	p.moved = p.window.setLimit(p.windowLimit, p.moved[:0])
	for _, m := range p.moved {
		es[m].where = inMain
		p.scratch = p.main.add(m, p.scratch[:0])
		out = p.passivate(p.scratch, out)
	}
	return out
}
