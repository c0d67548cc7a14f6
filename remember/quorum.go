package remember

import "slices"

// majority is how many of n replicas make a majority: n/2 + 1 (1 for n below 1).
func majority(n int) int { return max(n, 0)/2 + 1 }

// quorum is what an operation on one unit needs: a majority of each of its sets. A unit
// has one set, or two while its replicas move (the old and the new set together: joint
// quorums, as Raft changes its configuration), so that every decision taken during the
// move is seen by a majority of either set.
type quorum struct {
	unit Unit
	sets [][]NodeID
	gen  uint64 // the unit's configuration generation (UnitConfig.Gen)
}

// single returns the quorum of one set.
func single(u Unit, set []NodeID) quorum { return quorum{unit: u, sets: [][]NodeID{set}} }

// members returns every member of the quorum's sets, each once, self first when it is one.
func (q quorum) members(self NodeID) []NodeID {
	var out []NodeID
	if q.has(self) {
		out = append(out, self)
	}
	for _, s := range q.sets {
		for _, p := range s {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// has reports whether p is in one of the sets.
func (q quorum) has(p NodeID) bool {
	for _, s := range q.sets {
		if slices.Contains(s, p) {
			return true
		}
	}
	return false
}

// verdict of q given which members said yes (ok) and which may still answer (open).
func (q quorum) decide(ok, open func(NodeID) bool) verdict { return q.decideReading(ok, open, nil) }

// decideReading is decide for a read: refilling, when not nil, names the members that
// answered that they refill (machine_refill.go) and so do not count. Each set does without
// as many of its refilling members as it may (excusable): it then needs a majority of the
// others.
func (q quorum) decideReading(ok, open, refilling func(NodeID) bool) verdict {
	v := succeeded
	for _, s := range q.sets {
		yes, maybe, need := tallySet(s, ok, open, refilling)
		switch {
		case yes >= need:
		case yes+maybe < need:
			return failedNow
		default:
			v = pending
		}
	}
	return v
}

// shortfall describes the first set that misses its majority: how many said yes, how many
// were needed, of how many.
func (q quorum) shortfall(ok func(NodeID) bool) (got, need, n int) {
	return q.shortfallReading(ok, nil)
}

// shortfallReading is shortfall for a read whose refilling members (decideReading) do not
// count: need is a majority of those left, n counts them all.
func (q quorum) shortfallReading(ok, refilling func(NodeID) bool) (got, need, n int) {
	closed := func(NodeID) bool { return false }
	for _, s := range q.sets {
		yes, _, need := tallySet(s, ok, closed, refilling)
		if yes < need {
			return yes, need, len(s)
		}
	}
	if len(q.sets) > 0 {
		s := q.sets[0]
		return len(s), majority(len(s)), len(s)
	}
	return 0, 1, 0
}

// tallySet counts the members of set s that said yes and those that may still, and how many
// yeses s needs: a majority of s, or — when members of s refill (refilling, nil for none)
// — a majority of s without as many of them as excusable allows, those that can no longer
// answer left out first.
func tallySet(s []NodeID, ok, open, refilling func(NodeID) bool) (yes, maybe, need int) {
	var kOpen, kClosed int
	for _, p := range s {
		switch {
		case ok(p):
			yes++
		case refilling != nil && refilling(p):
			if open(p) {
				kOpen++
			} else {
				kClosed++
			}
		case open(p):
			maybe++
		}
	}
	e := kOpen + kClosed
	for e > 0 && !excusable(len(s), e) {
		e--
	}
	fromClosed := min(e, kClosed)
	maybe += kOpen - (e - fromClosed)
	return yes, maybe, majority(len(s) - e)
}

// excusable reports whether a set of n replicas may do without k of them that refill, as a
// read: every write quorum of the n (a majority) still meets a majority of the n-k others,
// W(n) + R(n-k) > n (with majorities: one replica, for any n above 1). It matters for sets
// of an even size, where a majority of the others is smaller: a set of two (a cluster of
// two members) would otherwise read nothing while one of them refills, as a member back from
// a rolling restart does for a moment, and every entity starting then would wait for it.
func excusable(n, k int) bool { return k > 0 && n-k > 0 && majority(n)+majority(n-k) > n }

// verdict of a quorum.
type verdict uint8

const (
	pending   verdict = iota // more answers may decide it
	succeeded                // every set has its majority
	failedNow                // a set cannot reach its majority any more
)
