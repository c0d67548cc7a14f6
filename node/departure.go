package node

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// A member that leaves gracefully first moves its store replicas off. Every replica of a
// shard's set keeps its vote until a move takes it out of the set (remember/unitconfig.go),
// so a member that left while sets still named it would take its vote with it: two of three
// replicas leaving at once would leave their shards without a majority for good. So a
// leaving member, before it hands its shards off and asks membership to leave:
//
//   - says it departs on the sharding-events topic every departAnnounce; every member that
//     hears it places nothing new on it (Placement's Away) for departTTL after the last
//     announcement, so the hosts of the shards whose sets name it move those sets;
//   - reads the units' configurations (a metadata scan) every departAnnounce, and has its
//     store repair the sets that name it and whose home is gone (remember.Machine.Care);
//   - goes on once two checks in a row, a departAnnounce apart, found no configuration
//     that names it (a host that had not heard of the departure may have started a move to
//     it just before: the second check sees its joint configuration), when no other member
//     may hold records, or after ShutdownTimeout (it then leaves with sets that still name
//     it, and says so);
//   - goes on announcing while it hands its shards off and leaves the membership: a set
//     that moved back onto it then would lose its vote when it is gone (sharding soak seed
//     224: a handoff that took handoff-timeout outlasted the mark, and sets moved back).
//
// The marks are soft state: a member that restarts forgets them and hears the next
// announcement. A mark is the departing incarnation's: a member that left and joined again
// (a new incarnation: a rolling restart) is placed again at once. Marked until the mark
// expired, it held no replica and was no voter of the metadata for up to departTTL after it
// was back; the next member to leave in that time moved its sets and the metadata's votes
// onto the members left, and the one after found no other member that might hold them and
// left at once, the metadata group's only voter (e2e TestRotatingKeysWithoutDowntime: asks
// failed with "no quorum" while it restarted).
const (
	departAnnounce = time.Second
	departTTL      = 5 * time.Second
)

// departures are the members known to depart (their marks expire), and this member's own
// departure while it runs.
type departures struct {
	marks map[membership.NodeID]departMark
	own   *departure
}

// departMark says that a member's incarnation departs, until when.
type departMark struct {
	incarnation uint64 // the newest that announced it; 0: not said (it is any incarnation)
	until       time.Time
}

// departure is this member's move of its replicas off itself.
type departure struct {
	started, deadline, next time.Time
	checking                bool
	// done: the replicas are off; the member hands its shards off and leaves the
	// membership, and goes on announcing until it stops, so that no set moves back onto it
	// meanwhile (a handoff may take handoff-timeout, longer than departTTL).
	done  bool
	named int // units whose sets named this member at the last check
	clean int // checks in a row that found none
}

// departing reports whether member m departs: its incarnation, or a newer one, announced
// it, and the mark has not expired.
func (c *Core) departing(m membership.Member) bool {
	d, ok := c.departs.marks[m.Node]
	return ok && c.now.Before(d.until) && (d.incarnation == 0 || m.Incarnation <= d.incarnation)
}

// startDeparture begins this member's graceful leave: its replicas first, then its shards
// and the membership (engine.Leave).
func (c *Core) startDeparture(now time.Time) {
	if c.departs.own != nil || c.eng.Leaving() {
		return
	}
	v := c.view.Load()
	if v == nil || !v.Joined || len(c.types) == 0 {
		c.eng.Leave(now)
		return
	}
	timeout := cmp.Or(c.cfg.ShutdownTimeout, engine.DefaultShutdownTimeout)
	c.departs.own = &departure{started: now, deadline: now.Add(timeout)}
	c.log.Info("leaving: moving this member's store replicas to others first", "timeout", timeout)
	c.tickDeparture(now)
}

// tickDeparture announces this member's departure and checks how far it is, every
// departAnnounce; it forgets the marks of others that expired.
func (c *Core) tickDeparture(now time.Time) {
	for id, d := range c.departs.marks {
		if !now.Before(d.until) {
			delete(c.departs.marks, id)
			c.replace() // placed again (published at the end of the tick)
		}
	}
	d := c.departs.own
	if d == nil || now.Before(d.next) {
		return
	}
	d.next = now.Add(departAnnounce)
	c.markDeparting(c.self.Node, c.self.Incarnation, now)
	c.env.Gossip(wire.AppendEvent(nil, wire.ShardingEvent{Kind: pb.ShardingEvent_STORE_DEPARTING, At: now, Origin: c.self.Node,
		Incarnation: c.self.Incarnation}))
	if !d.checking && !d.done {
		d.checking = true
		c.request(StoreRequest{Scan: datadir.Prefix(datadir.FamilyReplicas), IsScan: true}, storeWait{kind: waitDeparture})
	}
}

// markDeparting notes that incarnation inc of member id departs, for departTTL from now.
// An announcement of an older incarnation (gossip may bring one late) marks none newer.
func (c *Core) markDeparting(id membership.NodeID, inc uint64, now time.Time) {
	if c.departs.marks == nil {
		c.departs.marks = map[membership.NodeID]departMark{}
	}
	d, known := c.departs.marks[id]
	if known && d.incarnation != 0 && inc != 0 && inc < d.incarnation {
		return // a late word of an incarnation older than the one that departs now
	}
	c.departs.marks[id] = departMark{incarnation: inc, until: now.Add(departTTL)}
	if !known || d.incarnation != inc {
		c.replace()
		c.publishView() // the placement changes: hosts move the sets that name it
	}
}

// departureChecked takes the units' configurations as read: done when none names this
// member any more (or nobody else may hold records, or time is up); otherwise the store
// looks after the sets whose home is gone.
func (c *Core) departureChecked(now time.Time, res StoreResult) {
	d := c.departs.own
	if d == nil {
		return
	}
	d.checking = false
	if res.Err != nil {
		c.log.Debug("leaving: the replica sets were not read; trying again", "err", res.Err)
		if now.Before(d.deadline) {
			return
		}
	}
	// The metadata's voters keep this member while the others would be an even number
	// (remember.NewPlacement): it leaves while their configuration still names it, and
	// they remove it once it is gone from the membership.
	keptVoter := false
	if v := c.view.Load(); v != nil && v.placement != nil {
		keptVoter = slices.Contains(v.placement.Meta(), c.self.Node)
	}
	var named []remember.Unit
	for _, r := range res.Records {
		cfg, err := remember.DecodeUnitConfig(r.Value)
		u, ok := unitOfConfigKey(r.Key)
		if err != nil || !ok || !cfg.Votes(c.self.Node) || u.Meta() && keptVoter {
			continue
		}
		named = append(named, u)
	}
	d.named = len(named)
	if res.Err == nil && len(named) == 0 {
		d.clean++
	} else {
		d.clean = 0
	}
	switch {
	case d.clean >= 2:
		c.log.Info("leaving: no replica set names this member any more", "took", now.Sub(d.started))
	case !c.othersMayHold():
		c.log.Info("leaving: no other member may hold this member's replicas (all leave)", "sets_naming_it", len(named))
	case !now.Before(d.deadline):
		c.log.Warn("leaving with replica sets that still name this member: their shards need a majority of the others until their hosts move them",
			"sets_naming_it", len(named), "waited", now.Sub(d.started))
	default:
		c.env.CareFor(named)
		return
	}
	d.done = true
	c.eng.Leave(now)
}

// othersMayHold reports whether a member other than this one may hold shards' records.
func (c *Core) othersMayHold() bool {
	v := c.view.Load()
	if v == nil || v.placement == nil {
		return false
	}
	for _, m := range v.Members {
		if m.Node != c.self.Node && v.placement.Present(m.Node) {
			return true
		}
	}
	return false
}

// unitOfConfigKey returns the unit whose configuration is kept under key (rc␀TYPE␀SHARD; the
// zero Unit for the metadata's, rc␀␀, whose set and next decode as a unit's).
func unitOfConfigKey(key string) (remember.Unit, bool) {
	rest, ok := strings.CutPrefix(key, datadir.Prefix(datadir.FamilyReplicas))
	if !ok {
		return remember.Unit{}, false
	}
	typ, shard, ok := strings.Cut(rest, datadir.Sep)
	return remember.Unit{Type: typ, Shard: shard}, ok && (typ != "" || shard == "") // rc␀␀: the metadata's
}
