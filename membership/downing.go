package membership

import (
	"fmt"
	"slices"
	"time"
)

// Decision is the split-brain resolver's verdict on one member's view of a partition, as
// Akka's DowningStrategy.Decision.
type Decision uint8

// Decisions of the split-brain resolver.
const (
	// DownUnreachable: this side survives; the unreachable members are downed.
	DownUnreachable Decision = iota + 1
	// DownReachable: this side loses; its members (this one included) are downed.
	DownReachable
	// DownAll: no side can be trusted to survive; every member is downed.
	DownAll
	// DownIndirectlyConnected: the members that some member cannot reach but that still
	// gossip through others are downed, with what the decision says once the observations
	// between them are set aside.
	DownIndirectlyConnected
	// AcquireLeaseAndDownUnreachable (lease-majority): with the resolver's lease, this side
	// survives and downs the unreachable members; without it, DownReachable.
	AcquireLeaseAndDownUnreachable
	// AcquireLeaseAndDownIndirectlyConnected (lease-majority): with the lease, as
	// DownIndirectlyConnected; without it, ReverseDownIndirectlyConnected.
	AcquireLeaseAndDownIndirectlyConnected
	// ReverseDownIndirectlyConnected: the indirectly connected members and every reachable
	// member are downed (lease-majority without the lease).
	ReverseDownIndirectlyConnected
)

var decisionNames = [...]string{
	DownUnreachable:         "down-unreachable",
	DownReachable:           "down-reachable",
	DownAll:                 "down-all",
	DownIndirectlyConnected: "down-indirectly-connected",

	AcquireLeaseAndDownUnreachable:         "acquire-lease-and-down-unreachable",
	AcquireLeaseAndDownIndirectlyConnected: "acquire-lease-and-down-indirectly-connected",
	ReverseDownIndirectlyConnected:         "reverse-down-indirectly-connected",
}

// acquiresLease reports whether d is taken only with the resolver's lease (lease-majority).
func (d Decision) acquiresLease() bool {
	return d == AcquireLeaseAndDownUnreachable || d == AcquireLeaseAndDownIndirectlyConnected
}

// reverse is what a lease decision becomes without the lease, as Akka's reverseDecision.
func (d Decision) reverse() Decision {
	if d == AcquireLeaseAndDownIndirectlyConnected {
		return ReverseDownIndirectlyConnected
	}
	return DownReachable
}

func (d Decision) String() string {
	if int(d) < len(decisionNames) && decisionNames[d] != "" {
		return decisionNames[d]
	}
	return fmt.Sprintf("Decision(%d)", uint8(d))
}

// reachRecord is one observation: observer cannot reach subject.
type reachRecord struct{ observer, subject NodeID }

// partitionView is what a split-brain decision reads: one member's view of the members and
// of who cannot reach whom. It is a value built for one decision (Node.resolverView); the
// decision itself is a pure function of it, so Akka's DowningStrategy specs port to it
// one for one (downing_akka_test.go).
//
// It follows Akka's DowningStrategy, with one deliberate difference: a member Down but not
// yet Removed is counted, always on the other side. Akka drops Down members from every
// count. But an operator's down is not a leader action taken at convergence: a partition
// that falls a moment after it leaves one side knowing and the other not (sim soak seed
// 2,289). The side that does not know counts the member where it is; the side that knows
// counts it against itself, so the difference can only make a side lose, never win.
//
// Keep-majority (and lease-majority, to choose which side waits before it asks for the
// lease) counts only voters (voters.go): the side it keeps is the side whose voters grant the
// serving lease. A member not yet a voter that a leader could have made one in
// another view (possible) counts as Joining members do in Akka's edge case: possibly there.
// While the cluster has no more members than cluster.voters, every member votes and this is
// Akka's count. Static-quorum and keep-oldest count every member, as in Akka; the sides they
// keep may lack a majority of voters, which down-removal-margin (stable-after by default
// with them) covers until the other side has stopped.
type partitionView struct {
	cfg         SBRConfig
	members     map[NodeID]*Member // every member; Removed ones count nowhere
	unreachable map[NodeID]bool    // the subjects of records
	records     []reachRecord      // sorted
	seen        map[NodeID]bool    // members known to have seen this view, this one included (of the subjects of records, at least)
	possible    map[NodeID]bool    // members a leader could have made voters elsewhere (view.possiblePromotions)
	// The records by observer and by subject, when indexed (Node.records; nil otherwise).
	byObserver, bySubject map[NodeID][]NodeID
}

// counted reports whether m counts in a decision, and with the edge-case flags, as Akka's
// DowningStrategy.members(includingPossiblyUp, excludingPossiblyExiting):
//
//   - Up always;
//   - Joining and WeaklyUp only when possiblyUp: a leader moves them Up only once every
//     member has seen them so, so a member Joining in this view may already be Up in the
//     view of a side cut off at that instant;
//   - Leaving unless possiblyExiting: a Leaving member may already be Exiting on the other
//     side, which does not count it;
//   - Exiting never: it has handed everything off and is about to be removed;
//   - Down always (the difference above), and it is unreachable (isUnreachable).
//
// Keep-majority counts voters only, and a possible voter as Akka counts a Joining member.
func (p *partitionView) counted(m *Member, possiblyUp, possiblyExiting bool) bool {
	if p.votersCount() && !m.Voter {
		return possiblyUp && p.possible[m.Node]
	}
	switch m.Status {
	case Up, Down:
		return true
	case Joining, WeaklyUp:
		return possiblyUp
	case Leaving:
		return !possiblyExiting
	}
	return false
}

// votersCount reports whether the strategy counts voters only (keep-majority, lease-majority).
func (p *partitionView) votersCount() bool {
	return p.cfg.ActiveStrategy == KeepMajority || p.cfg.ActiveStrategy == LeaseMajority
}

// isUnreachable reports whether m counts on the other side: some member cannot reach it, or
// it is Down.
func (p *partitionView) isUnreachable(m *Member) bool {
	return p.unreachable[m.Node] || m.Status == Down
}

// withRole returns the counted members with the strategy's role, in the strategy's order
// (oldest first for keep-oldest, by node id otherwise). side filters: 0 every member, +1
// the reachable ones, -1 the unreachable ones.
func (p *partitionView) withRole(possiblyUp, possiblyExiting bool, side int) []*Member {
	var out []*Member
	for _, m := range p.members {
		if !p.counted(m, possiblyUp, possiblyExiting) || !m.HasRole(p.cfg.Role) {
			continue
		}
		if u := p.isUnreachable(m); (side > 0 && u) || (side < 0 && !u) {
			continue
		}
		out = append(out, m)
	}
	if p.cfg.ActiveStrategy == KeepOldest {
		slices.SortFunc(out, byAge)
	} else {
		slices.SortFunc(out, func(a, b *Member) int { return compareIDs(a.Node, b.Node) })
	}
	return out
}

func compareIDs(a, b NodeID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// indirectlyConnected returns the members that are marked unreachable yet still exchange
// gossip through others, as Akka finds them: cycle holds the observers that are themselves
// observed unreachable (a cycle in the unreachability graph), seenEnds both ends of each
// observation whose subject has seen this view (unreachable from the observer, not from
// everyone). A clean partition or a crash gives none: the other side neither observes nor
// sees.
//
// With the records indexed (byObserver, bySubject) it looks only at the unreachable
// observers and the subjects that have seen the view, not at every record.
func (p *partitionView) indirectlyConnected() (all, cycle, seenEnds map[NodeID]bool) {
	all, cycle, seenEnds = map[NodeID]bool{}, map[NodeID]bool{}, map[NodeID]bool{}
	if p.byObserver != nil {
		for o := range p.unreachable {
			if len(p.byObserver[o]) > 0 {
				cycle[o], all[o] = true, true
			}
		}
		for s := range p.seen {
			for _, o := range p.bySubject[s] {
				seenEnds[o], seenEnds[s] = true, true
				all[o], all[s] = true, true
			}
		}
		return all, cycle, seenEnds
	}
	for _, r := range p.records {
		if p.unreachable[r.observer] {
			cycle[r.observer], all[r.observer] = true, true
		}
		if p.seen[r.subject] {
			seenEnds[r.observer], seenEnds[r.subject] = true, true
			all[r.observer], all[r.subject] = true, true
		}
	}
	return all, cycle, seenEnds
}

// decide applies the strategy to the view and says why, in words.
func (p *partitionView) decide() (Decision, string) {
	ic, _, _ := p.indirectlyConnected()
	switch p.cfg.ActiveStrategy {
	case DownAllNodes:
		return DownAll, "down-all downs every member at any partition"
	case StaticQuorum:
		return p.staticQuorum(len(ic) > 0)
	case LeaseMajority:
		if len(ic) > 0 {
			return AcquireLeaseAndDownIndirectlyConnected, p.icReason(ic)
		}
		here, there := len(p.withRole(false, false, +1)), len(p.withRole(false, false, -1))
		return AcquireLeaseAndDownUnreachable, fmt.Sprintf("%d here, %d unreachable: the side that holds the lease survives", here, there)
	case KeepOldest:
		if len(ic) > 0 {
			return DownIndirectlyConnected, p.icReason(ic)
		}
		return p.keepOldest()
	default:
		if len(ic) > 0 {
			return DownIndirectlyConnected, p.icReason(ic)
		}
		return p.keepMajority()
	}
}

func (p *partitionView) icReason(ic map[NodeID]bool) string {
	ids := make([]NodeID, 0, len(ic))
	for id := range ic {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return fmt.Sprintf("%s are indirectly connected (unreachable from some member, yet still gossiping)", shortIDs(ids))
}

func (p *partitionView) staticQuorum(indirect bool) (Decision, string) {
	q := p.cfg.QuorumSize
	all := len(p.withRole(false, false, 0))
	if all > 2*q-1 {
		return DownAll, fmt.Sprintf("%d members exceed 2*quorum-size-1 = %d, so no side can be trusted", all, 2*q-1)
	}
	if indirect {
		ic, _, _ := p.indirectlyConnected()
		return DownIndirectlyConnected, p.icReason(ic)
	}
	here := all - len(p.withRole(false, false, -1))
	if here >= q {
		return DownUnreachable, fmt.Sprintf("%d of %d here, quorum %d", here, all, q)
	}
	return DownReachable, fmt.Sprintf("%d of %d here, below quorum %d", here, all, q)
}

func (p *partitionView) keepMajority() (Decision, string) {
	all := p.withRole(false, false, 0)
	if len(all) == 0 {
		return DownAll, "no counted member with the role"
	}
	here, there := len(p.withRole(false, false, +1)), len(p.withRole(false, false, -1))
	d := p.majority(here, there, all[0])
	why := fmt.Sprintf("%d here, %d unreachable", here, there)
	if here == there {
		why += fmt.Sprintf(", a tie: the side with the lowest node id %s wins", all[0].Node.Short())
	}
	if d != DownUnreachable {
		return d, why
	}
	// The membership-change edge case: count as few as could be here (no Joining, no
	// Leaving) and as many as could be there (Joining, Leaving). A member the other side
	// already moved Up, or moved on from Leaving to Exiting, then cannot make both sides win.
	few := p.withRole(false, true, 0)
	if len(few) == 0 {
		return DownAll, why + "; with members changing status, no counted member is left"
	}
	here2, there2 := len(p.withRole(false, true, +1)), len(p.withRole(true, false, -1))
	if p.majority(here2, there2, few[0]) != DownUnreachable {
		return DownAll, fmt.Sprintf("%s, but %d here against %d counting the members whose status may differ on the other side: no side can be trusted", why, here2, there2)
	}
	return DownUnreachable, why
}

// acquireDelay is how long lease-majority waits before it asks for the lease, as Akka's
// LeaseMajority: acquire-lease-delay-for-minority on the side keep-majority's count puts in the
// minority (ties go to the side of the lowest node id), none otherwise. Indirectly connected
// members are decided at once.
func (p *partitionView) acquireDelay(d Decision) time.Duration {
	if d != AcquireLeaseAndDownUnreachable {
		return 0
	}
	all := p.withRole(false, false, 0)
	if len(all) == 0 {
		return 0 // no member with the role: no side is the minority
	}
	here, there := len(all)-len(p.withRole(false, false, -1)), len(p.withRole(false, false, -1))
	if p.majority(here, there, all[0]) == DownUnreachable {
		return 0
	}
	return p.cfg.LeaseMajority.AcquireLeaseDelayForMinority
}

// majority is Akka's majorityDecision: the bigger side survives, a tie goes to the side
// of lowest.
func (p *partitionView) majority(here, there int, lowest *Member) Decision {
	switch {
	case here > there:
		return DownUnreachable
	case here < there:
		return DownReachable
	case p.isUnreachable(lowest):
		return DownReachable
	}
	return DownUnreachable
}

func (p *partitionView) keepOldest() (Decision, string) {
	all := p.withRole(false, false, 0)
	if len(all) == 0 {
		return DownAll, "no counted member with the role"
	}
	oldest := all[0]
	here, there := len(p.withRole(false, false, +1)), len(p.withRole(false, false, -1))
	d := p.oldestDecision(!p.isUnreachable(oldest), here, there)
	where := "here"
	if p.isUnreachable(oldest) {
		where = "on the other side"
	}
	why := fmt.Sprintf("%d here, %d unreachable, oldest %s %s", here, there, oldest.Node.Short(), where)
	if d != DownUnreachable {
		return d, why
	}
	// The edge case: Leaving members not counted (they may be Exiting on the other side);
	// with down-if-alone, Joining members on the other side counted too (they may be Up
	// there and turn the alone test).
	//
	// A deliberate difference: Akka counts Joining members on this side too. But a member
	// that joined through this side after the partition fell is unknown to the other side,
	// which cannot count it; counted here, it made this side "not alone" against an oldest
	// that, counting the same members but that one, was not alone either, and both sides
	// downed each other (sim soak seed 4,755). Counting Joining members only on the other
	// side, as keep-majority's edge case does, can only make this side lose.
	few := p.withRole(false, true, 0)
	if len(few) == 0 {
		return DownAll, why + "; with members changing status, no counted member is left"
	}
	here2, there2 := len(p.withRole(false, true, +1)), len(p.withRole(p.cfg.DownIfAlone, true, -1))
	if p.oldestDecision(!p.isUnreachable(few[0]), here2, there2) != DownUnreachable {
		return DownAll, why + ", but not counting the members whose status may differ on the other side: no side can be trusted"
	}
	return DownUnreachable, why
}

// oldestDecision is Akka's: the side of the oldest survives, unless with down-if-alone the
// oldest is alone against at least two. In a cluster of two the oldest is kept even alone:
// the other member is no better.
func (p *partitionView) oldestDecision(oldestHere bool, here, there int) Decision {
	alone := p.cfg.DownIfAlone
	if oldestHere {
		if alone && here == 1 && there >= 2 {
			return DownReachable
		}
		return DownUnreachable
	}
	if alone && there == 1 && here >= 2 {
		return DownUnreachable
	}
	return DownReachable
}

// downable reports whether a decision may down m: Joining, Up or Leaving, with any role.
// Exiting members are never downed: they have handed everything off.
func downable(m *Member) bool { return m.Status <= Leaving }

// nodesToDown returns the members decision d downs, sorted, and the decision in effect: a
// DownIndirectlyConnected whose second decision is indirectly connected again (observations
// that the clean partition hides from this side) becomes DownAll, as in Akka.
func (p *partitionView) nodesToDown(d Decision) ([]NodeID, Decision) {
	var out []NodeID
	switch d {
	case AcquireLeaseAndDownUnreachable:
		out, _ = p.nodesToDown(DownUnreachable)
		return out, d
	case AcquireLeaseAndDownIndirectlyConnected:
		out, eff := p.nodesToDown(DownIndirectlyConnected)
		if eff == DownAll {
			return out, eff
		}
		return out, d
	case DownIndirectlyConnected:
		ic, cycle, seenEnds := p.indirectlyConnected()
		extra, ok := p.additionalWhenIndirectlyConnected(cycle, seenEnds)
		if !ok {
			return p.nodesToDown(DownAll)
		}
		for _, m := range p.members {
			if downable(m) && (ic[m.Node] || extra[m.Node]) {
				out = append(out, m.Node)
			}
		}
	case ReverseDownIndirectlyConnected:
		ic, _, _ := p.indirectlyConnected()
		for _, m := range p.members {
			if downable(m) && (ic[m.Node] || !p.unreachable[m.Node]) {
				out = append(out, m.Node)
			}
		}
	default:
		for _, m := range p.members {
			if !downable(m) {
				continue
			}
			u := p.unreachable[m.Node]
			if d == DownAll || (d == DownUnreachable && u) || (d == DownReachable && !u) {
				out = append(out, m.Node)
			}
		}
	}
	slices.Sort(out)
	return out, d
}

// additionalWhenIndirectlyConnected decides again with the observations between the
// indirectly connected members set aside, so that a clean partition (or a crash) beside
// them is still decided (cycle and seenEnds as indirectlyConnected returns them). ok is
// false when that decision is indirectly connected again.
func (p *partitionView) additionalWhenIndirectlyConnected(cycle, seenEnds map[NodeID]bool) (map[NodeID]bool, bool) {
	rest := *p
	rest.records, rest.unreachable = nil, map[NodeID]bool{}
	rest.byObserver, rest.bySubject = nil, nil // the index is of p's records
	for _, r := range p.records {
		o, s := p.members[r.observer], p.members[r.subject]
		if o == nil || s == nil || !downable(o) || !downable(s) {
			continue
		}
		if (cycle[r.observer] && cycle[r.subject]) || (seenEnds[r.observer] && seenEnds[r.subject]) {
			continue
		}
		rest.records = append(rest.records, r)
		rest.unreachable[r.subject] = true
	}
	if len(rest.records) == 0 {
		return nil, true
	}
	d, _ := rest.decide()
	if d == DownIndirectlyConnected || d == AcquireLeaseAndDownIndirectlyConnected {
		return nil, false
	}
	nodes, _ := rest.nodesToDown(d)
	extra := map[NodeID]bool{}
	for _, id := range nodes {
		extra[id] = true
	}
	return extra, true
}

func shortIDs(ids []NodeID) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.Short()
	}
	return fmt.Sprint(out)
}
