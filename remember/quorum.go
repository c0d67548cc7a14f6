package remember

import "math"

// Required is how many replicas, this one included, must answer an operation among n
// replicas with plus replicas beyond a majority and at least minCap: Akka's
// ReadWriteAggregator.calculateMajority,
//
//	min(n, max(n/2 + 1 + plus, minCap))
//
// so a cluster smaller than minCap needs every replica, and a plus or minCap at least n
// (AllMembers) needs all. plus below 0 counts as 0; n below 1 as 1 (this replica).
func Required(n, plus, minCap int) int {
	n = max(n, 1)
	plus = max(plus, 0)
	majority := n/2 + 1
	need := majority + plus
	if plus > math.MaxInt-majority {
		need = math.MaxInt
	}
	return min(n, max(need, minCap))
}

// tally counts one operation's answers against its quorum.
type tally struct {
	ok      int    // replicas that stored (or answered) it
	refused int    // replicas that refused it for fencing
	failed  int    // replicas that answered with an error
	need    uint64 // the highest epoch a refusing replica asked for
}

// verdict of a tally.
type verdict uint8

const (
	pending   verdict = iota // more answers may decide it
	succeeded                // ok reached the quorum
	failedNow                // the quorum cannot be reached any more
)

// decide returns the tally's verdict when required answers are needed and outstanding
// replicas have not answered yet.
func (t *tally) decide(required, outstanding int) verdict {
	switch {
	case t.ok >= required:
		return succeeded
	case t.ok+outstanding < required:
		return failedNow
	default:
		return pending
	}
}
