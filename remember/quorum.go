package remember

import (
	"math"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

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

// quorum is whose answers an operation on a key needs, and how many (need).
type quorum uint8

const (
	withPlus quorum = iota // a majority of Members plus Write/ReadMajorityPlus, at least MajorityMinCap
	majority               // a plain majority of Members, at least MajorityMinCap: MajorityPrefixes
	ofVoters               // a plain majority of Voters: VoterPrefixes
)

// quorumOf returns the quorum key (or every key under the prefix key) takes.
func (s *Store) quorumOf(key string) quorum {
	has := func(prefixes []string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(key, p) {
				return true
			}
		}
		return false
	}
	switch {
	case s.cfg.Voters != nil && has(s.cfg.VoterPrefixes):
		return ofVoters
	case has(s.cfg.MajorityPrefixes):
		return majority
	}
	return withPlus
}

// need is how many of n replicas must answer an operation of quorum q, plus being
// WriteMajorityPlus or ReadMajorityPlus.
func (s *Store) need(n, plus int, q quorum) int {
	switch q {
	case majority:
		return Required(n, 0, s.cfg.MajorityMinCap)
	case ofVoters:
		return n/2 + 1
	}
	return Required(n, plus, s.cfg.MajorityMinCap)
}

// replicasOf returns the replicas an operation of quorum q asks: Members (this one first),
// or the Voters (this one among them only if it is one).
func (s *Store) replicasOf(q quorum) []peer.ID {
	if q != ofVoters {
		return s.members()
	}
	vs := s.cfg.Voters()
	out := make([]peer.ID, 0, len(vs))
	for _, v := range vs {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
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
