package remember

// A host reads its unit from a quorum when it starts hosting it, and after that learns of a
// record only from its own writes — but a record another member wrote can land later: an
// earlier host's write that was in flight at a handoff, a write that failed its quorum yet
// reached one replica and is copied by anti-entropy, an operator's removal. Such records
// are reported in Ready.Landed once on this replica's disk, so that what the host builds on
// them (its reminders) is read again then, not on a timer.

// noteLanded reports the keys of recs, except those at refused, that are in a unit this
// member hosts (Ready.Landed). recs are another member's, stored here.
func (m *Machine) noteLanded(recs []entry, refused []refusal) {
	for i := range recs {
		if len(refused) > 0 && refused[0].index == i { // refusals come in index order
			refused = refused[1:]
			continue
		}
		key := recs[i].rec.Key
		u := m.layout.UnitOf(key)
		if us := m.units[u]; us != nil && us.hosted && !u.Meta() {
			m.out.Landed = append(m.out.Landed, key)
		}
	}
}
