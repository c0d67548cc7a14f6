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
func (q quorum) decide(ok, open func(NodeID) bool) verdict {
	v := succeeded
	for _, s := range q.sets {
		yes, maybe := 0, 0
		for _, p := range s {
			switch {
			case ok(p):
				yes++
			case open(p):
				maybe++
			}
		}
		need := majority(len(s))
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
	for _, s := range q.sets {
		yes := 0
		for _, p := range s {
			if ok(p) {
				yes++
			}
		}
		if yes < majority(len(s)) {
			return yes, majority(len(s)), len(s)
		}
	}
	if len(q.sets) > 0 {
		s := q.sets[0]
		return len(s), majority(len(s)), len(s)
	}
	return 0, 1, 0
}

// verdict of a quorum.
type verdict uint8

const (
	pending   verdict = iota // more answers may decide it
	succeeded                // every set has its majority
	failedNow                // a set cannot reach its majority any more
)
