package discovery

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bootstrap decides, round by round, whether this member forms a new cluster. It is a pure
// machine: the rounds and the clock come in as values.
type Bootstrap struct {
	self         string
	minMembers   int
	stableMargin time.Duration

	last  string    // the previous round's answer, as a fingerprint
	since time.Time // when the answer last changed
}

// NewBootstrap returns the machine of member self (its peer id): it forms a new cluster
// only with at least minMembers members found, unchanged for stableMargin.
func NewBootstrap(self string, minMembers int, stableMargin time.Duration) *Bootstrap {
	return &Bootstrap{self: self, minMembers: max(minMembers, 1), stableMargin: stableMargin}
}

// Decision is the outcome of a round.
type Decision struct {
	// Form: this member forms a new cluster now.
	Form bool
	// Why says, for the log, why it forms or what it waits for.
	Why string
}

// Observe takes one round: every address the name resolved to, with the peer id that
// answered there ("" when none has yet). It must be called only while the member has not
// joined: a round in which some member admitted it never comes.
func (b *Bootstrap) Observe(now time.Time, found map[string]string) Decision {
	addrs := make([]string, 0, len(found))
	for a := range found {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	var fp strings.Builder
	var silent, ids []string
	self := false
	for _, a := range addrs {
		id := found[a]
		fmt.Fprintf(&fp, "%s=%s;", a, id)
		switch id {
		case "":
			silent = append(silent, a)
		case b.self:
			self = true
		}
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if b.since.IsZero() || fp.String() != b.last {
		b.last, b.since = fp.String(), now
	}
	slices.Sort(ids)
	switch {
	case len(addrs) == 0:
		return Decision{Why: "the name resolves to no address yet"}
	case len(silent) > 0:
		return Decision{Why: fmt.Sprintf("waiting for %s to answer with a peer id (%d of %d addresses answered)", strings.Join(silent, ", "), len(addrs)-len(silent), len(addrs))}
	case !self:
		return Decision{Why: "this member is not among the addresses the name resolves to yet"}
	case len(ids) < b.minMembers:
		return Decision{Why: fmt.Sprintf("found %d of the %d members needed to form a new cluster (cluster.min-nr-of-members)", len(ids), b.minMembers)}
	case ids[0] != b.self:
		return Decision{Why: fmt.Sprintf("no member found has admitted this one yet; %s has the lowest peer id of the %d found and forms the cluster", ids[0], len(ids))}
	case now.Sub(b.since) < b.stableMargin:
		return Decision{Why: fmt.Sprintf("this member has the lowest peer id of the %d found; forming a new cluster once they stay the same for %v (join-dns-stable-margin)", len(ids), b.stableMargin)}
	}
	return Decision{Form: true, Why: fmt.Sprintf("no member found is in a cluster and this one has the lowest peer id of the %d found, unchanged for %v: forming a new cluster", len(ids), b.stableMargin)}
}
