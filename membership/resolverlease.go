package membership

import (
	"fmt"
	"slices"
	"time"
)

// The resolver's lease (lease-majority), as Akka's SplitBrainResolver holds it.
//
// The leader of a side asks for the lease when its decision is due (at once on the side that
// keep-majority's count puts in the majority, after acquire-lease-delay-for-minority on the
// other) and waits, deciding nothing else meanwhile. With the lease its side survives and it
// downs the unreachable members (or the indirectly connected ones); without it, or without
// an answer within lease-operation-timeout, it downs its own side (the reverse decision).
// Once the members it downed are removed, it keeps the lease for release-after and then
// releases it.
//
// The machine does not touch the lease: it asks through Ready.Lease and is told the result
// with LeaseResult. The runtime (node, and internal/sim) carries the operations out.

// LeaseOp asks the runtime to acquire or release the resolver's lease.
type LeaseOp struct {
	// Release: give the lease up. Otherwise acquire it, and answer with Node.LeaseResult
	// naming Seq.
	Release bool
	// Seq names an acquisition: an answer to an earlier one is stale.
	Seq uint64
	// Name is the lease's name (lease-majority.lease-name); empty for the runtime's default.
	Name string
}

// leaseDecision is a decision waiting for the lease.
type leaseDecision struct {
	held     Decision // in effect with the lease
	reversed Decision // in effect without it
	win      []NodeID // downed with the lease
	lose     []NodeID // downed without it
	askAt    time.Time
	seq      uint64 // 0 until asked
	deadline time.Time
	report   Downed // the event, completed when the decision is taken
}

// leaseRelease says when the lease held is to be released: once every member of downed is
// removed, release-after later (at).
type leaseRelease struct {
	downed []NodeID
	at     time.Time // zero while members of downed are not removed
}

// awaitLease starts waiting for the lease to take decision d on view p (the leader's).
func (n *Node) awaitLease(p *partitionView, d Decision, report Downed) {
	win, held := p.nodesToDown(d) // DownAll when indirectly connected twice over
	lose, reversed := p.nodesToDown(d.reverse())
	n.leaseWait = &leaseDecision{held: held, reversed: reversed, win: win, lose: lose, askAt: n.now.Add(p.acquireDelay(d)), report: report}
	n.tickLease()
}

// tickLease asks for the lease when its time has come, gives up on an answer that is late,
// and releases a lease held that is no longer needed.
func (n *Node) tickLease() {
	lm := n.cfg.SplitBrainResolver.LeaseMajority
	if w := n.leaseWait; w != nil {
		switch {
		case w.seq == 0 && !n.now.Before(w.askAt):
			n.leaseSeq++
			w.seq, w.deadline = n.leaseSeq, n.now.Add(lm.LeaseOperationTimeout)
			n.out.Lease = append(n.out.Lease, LeaseOp{Seq: w.seq, Name: lm.LeaseName})
		case w.seq != 0 && !n.now.Before(w.deadline):
			n.leaseDecided(false, fmt.Sprintf("no answer from the lease within lease-operation-timeout (%v)", lm.LeaseOperationTimeout))
		}
	}
	r := n.leaseRelease
	if r == nil {
		return
	}
	if r.at.IsZero() {
		for _, id := range r.downed {
			if m, ok := n.v.members[id]; ok && m.Status != Removed {
				return
			}
		}
		r.at = n.now.Add(lm.ReleaseAfter)
	}
	if !n.now.Before(r.at) {
		n.leaseRelease = nil
		n.out.Lease = append(n.out.Lease, LeaseOp{Release: true, Name: lm.LeaseName})
	}
}

// LeaseResult answers the acquisition seq of the resolver's lease (LeaseOp): held reports
// whether this member holds the lease now. An answer to an acquisition the machine gave up
// on releases a lease it holds.
//
// A stopped machine ignores it, as every input: the runtime releases the lease when the
// member stops.
func (n *Node) LeaseResult(now time.Time, seq uint64, held bool) {
	n.now = now
	if n.stopped != nil {
		return
	}
	if w := n.leaseWait; w != nil && w.seq == seq {
		why := "not acquired: held by another member, or out of reach"
		if held {
			why = ""
		}
		n.leaseDecided(held, why)
	} else if held && n.leaseRelease == nil {
		n.out.Lease = append(n.out.Lease, LeaseOp{Release: true, Name: n.cfg.SplitBrainResolver.LeaseMajority.LeaseName})
	}
	n.afterInput()
}

// leaseDecided takes the decision that waited for the lease: with it, as decided; without
// it (denied, or no answer: why), the reverse.
func (n *Node) leaseDecided(held bool, why string) {
	w := n.leaseWait
	n.leaseWait = nil
	d, nodes := w.held, w.win
	e := w.report
	if held {
		e.Lease = true
		e.Reason += "; holding the lease"
		if len(nodes) > 0 {
			n.leaseRelease = &leaseRelease{downed: nodes}
		} else {
			n.leaseRelease = &leaseRelease{at: n.now.Add(n.cfg.SplitBrainResolver.LeaseMajority.ReleaseAfter)}
		}
	} else {
		d, nodes = w.reversed, w.lose
		e.Reason += "; without the lease (" + why + ")"
	}
	e.Decision = d
	n.actOn(e, nodes)
	n.sbrSignature = "" // a decision taken: stable-after starts again
	n.unstableSince = time.Time{}
}

// actOn marks the members of nodes Down (those not already Down or Removed), tells each of the
// others, and reports the decision; this member goes last.
func (n *Node) actOn(e Downed, nodes []NodeID) {
	self := false
	for _, id := range nodes {
		switch m := n.v.members[id]; {
		case id == n.self.Node:
			self = true
		case m != nil && m.Status < Down:
			e.Nodes = append(e.Nodes, id)
		}
	}
	if self {
		e.Nodes = append(e.Nodes, n.self.Node)
	}
	slices.Sort(e.Nodes)
	if len(e.Nodes) == 0 {
		return
	}
	e.Reason += fmt.Sprintf("; downing %s", shortIDs(e.Nodes))
	n.emit(e)
	for _, id := range e.Nodes {
		n.setStatus(id, Down)
		if id != n.self.Node {
			// Told at once, as a member that still heartbeats is told (tellStatus): when this
			// member downs itself too it stops now, and an exchange needs its answers.
			n.lastExchange[id] = time.Time{}
			n.tellStatus(id)
		}
	}
}
