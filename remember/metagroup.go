package remember

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/remember/metaraft"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// The metadata (coordinator terms, directives and pins, placement history, leases, audit,
// the shard units' configurations) is one Raft group over the voters, the oldest Up members
// (Placement.Meta): docs/design/metadata-raft.md. A voter holds a replica of the group (a
// metaraft.Member applying the log to metaRecords); a member that is not one forwards its
// metadata calls to a voter. Metadata calls never go through the shard units' quorum
// rounds.

// metaGroup is this member's part in the metadata group.
type metaGroup struct {
	member *metaraft.Member // nil: holds no replica of the group (not a voter yet)
	recs   *metaRecords
	err    error // why the replica could not start (a damaged storage): logged once, calls fail

	calls   map[uint64]*metaCall // calls waiting for the member, by its call id
	retries []*metaCall          // calls to make again at their retryAt (no leader yet)

	ask     int               // a non-voter's rotation over the voters it forwards to
	driveAt time.Time         // the leader's next look at the voters
	driving uint64            // the member's ChangeVoters call in flight (0: none)
	joins   map[NodeID]uint64 // replicas that announced themselves to be added, by member
	joinAt  time.Time         // this member's next announcement (while it waits to be added)
	// unknownSince: since when a voter of the placement has no replica the leader knows of
	unknownSince time.Time
	reset        bool      // its replica was reset: it never founds
	restartAt    time.Time // when a stopped replica starts again (zero: not stopped, or not yet seen)
	recording    bool      // the leader's record of the voters is being written (recordVoters)
	recorded     uint64    // the configuration index whose voters it recorded
	seed         *metaSeed // merging the metadata of its disk into the group (metaseed.go)
}

// metaJoinWait is how long the leader keeps voters the placement no longer names while a
// voter it names has not announced its replica.
const metaJoinWait = 10 * time.Second

// metaCall is one metadata call: a proposal, or a read (keys or a prefix) after a read
// index. Its answer goes to done; it is made again (or forwarded to the next voter) until
// deadline while the group has no leader.
type metaCall struct {
	propose  *pb.MetaProposal
	read     *pb.ReplicaRead
	served   bool // a member forwarded it here (serveMetaCall): it is not forwarded on
	deadline time.Time
	done     func(*pb.MetaAnswer, error)
	tried    []NodeID // the voters a forwarded call went to
	lastErr  error
	retryAt  time.Time           // when it is made again (in retries)
	paged    []*pb.ReplicaRecord // a forwarded scan's pages so far
	seed     bool                // a seed's merge (metaseed.go): not held while seeding
}

// metaTry is how long a forwarded call waits for one voter before it asks the next.
func (m *Machine) metaTry() time.Duration { return m.cfg.Timeout / 3 }

// metaRaftConfig returns the group's settings for this member.
func (m *Machine) metaRaftConfig(found bool) metaraft.Config {
	return metaraft.Config{Self: string(m.self), Found: found, Tick: m.cfg.MetaTick, Timeout: m.cfg.Timeout}
}

// holdsGroup reports whether st holds a part of a group (a member that was a voter).
func holdsGroup(st metaraft.Storage) (bool, error) {
	last, err := st.LastIndex()
	if err != nil {
		return false, err
	}
	snap, err := st.Snapshot()
	if err != nil {
		return false, err
	}
	return last > 0 || len(snap.GetMetadata().GetConfState().GetVoters()) > 0, nil
}

// startMeta starts this member's replica of the group when it should hold one: its storage
// holds a part of the group (it was a voter: it carries on), or the placement names it a
// voter (it starts empty and the leader adds it). A member founds the group — a group of
// itself, which grows as the leader adds the other voters — only as the first member moved
// Up (up-number 1; not merely the oldest it sees: while a cluster forms, a Joining member
// may see itself the oldest of one) on an empty disk that never ran: the member that forms
// a new cluster (a member that joins one is younger than its voters), or as the first of a
// seed (metaseed.go: a store
// restored from a backup, or from a release before the group, founds with its metadata). A
// member that ran before never founds otherwise, so a cluster restarting without its
// voters waits for them rather than start a second, empty metadata.
func (m *Machine) startMeta() {
	g := &m.mg
	if g.member != nil || g.err != nil || m.cfg.MetaStorage == nil {
		return
	}
	held, err := holdsGroup(m.cfg.MetaStorage)
	if err != nil {
		g.err = fmt.Errorf("remember: read the metadata group's storage: %w", err)
		return
	}
	voter := m.place != nil && slices.Contains(m.place.Meta(), m.self)
	if !held && (!voter || m.place.Age(m.self) == 0) {
		return // a voter not Up yet waits: whether it founds is known once it is
	}
	fresh := !m.cfg.Returning && m.keys == 0
	found := !held && !g.reset && (fresh || m.cfg.MetaSeed) && voter && m.place.Age(m.self) == 1
	g.recs = newMetaRecords(m.mirrorMeta)
	member, err := metaraft.New(m.metaRaftConfig(found), m.cfg.MetaStorage, g.recs, m.now)
	if err != nil {
		g.err, g.recs = err, nil
		return
	}
	g.member, g.calls = member, map[uint64]*metaCall{}
	if found {
		m.startSeed(true)
	}
	m.pumpMeta()
}

// mirrorMeta writes what the group applied to the local disk, where ScanAll and the
// offline tools (inspect, backup) read it.
func (m *Machine) mirrorMeta(changes []change) {
	recs := make([]entry, len(changes))
	for i := range changes {
		recs[i] = changes[i].after
	}
	m.apply(applyOp{kind: opMerge, recs: recs}, func(DiskResult) {})
}

// inGroup reports whether this member's replica is a voter of the configuration it
// applied: only then does it make calls itself rather than forward them.
func (g *metaGroup) inGroup() bool {
	if g.member == nil {
		return false
	}
	c, id := g.member.Configuration(), g.member.ID()
	is := func(v metaraft.Voter) bool { return v.ID == id }
	return slices.ContainsFunc(c.Voters, is) || slices.ContainsFunc(c.Outgoing, is)
}

// callMeta makes a metadata call: on this member's replica when it is a voter, else at a
// voter. done gets the answer, or an error once the call's time is up.
func (m *Machine) callMeta(c *metaCall) {
	if c.deadline.IsZero() {
		c.deadline = m.now.Add(m.cfg.Timeout)
	}
	g := &m.mg
	switch {
	case g.err != nil:
		c.done(nil, g.err)
	case g.inGroup() && (g.leads() || c.served):
		m.callLocal(c)
	case c.served:
		// A call a member forwarded here is made here or refused, never forwarded on: its
		// forwarder asks the next voter itself. Voters that knew no leader relayed each
		// other's calls, each relay a new call that relayed again while the group elected:
		// runtime soak seed 771 held 14,000 calls in flight after 2 s, and its time stood
		// nearly still.
		c.done(nil, &MetaError{Cause: errNotVoter})
	case m.place == nil:
		c.done(nil, ErrNoPlacement)
	case g.inGroup() && !slices.ContainsFunc(m.place.Meta(), func(p NodeID) bool { return p != m.self }):
		m.callLocal(c) // alone: it waits for its own election
	default:
		// Not a voter, or one that knows no leader (an election; or it was away while the
		// group went on without it): a voter that knows one makes it.
		m.forwardMeta(c)
	}
}

// leads reports whether this member's replica knows the group's leader.
func (g *metaGroup) leads() bool {
	lead, _ := g.member.Leader()
	return lead != ""
}

// callLocal makes c on this member's replica.
func (m *Machine) callLocal(c *metaCall) {
	g := &m.mg
	if g.seeding() && !c.seed {
		g.seed.held = append(g.seed.held, c)
		return
	}
	var id uint64
	if c.propose != nil {
		data := wire.Marshal(c.propose)
		if m.cfg.Admit != nil {
			if err := m.cfg.Admit(len(data)); err != nil {
				c.done(nil, &MetaError{Cause: err})
				return
			}
		}
		id = g.member.Propose(m.now, data)
	} else {
		id = g.member.ReadIndex(m.now)
	}
	g.calls[id] = c
	m.pumpMeta()
}

// metaAnswered ends a call of the replica: the answer, or again at the next tick while the
// group has no leader and time is left.
func (m *Machine) metaAnswered(a metaraft.Answer) {
	g := &m.mg
	c := g.calls[a.Call]
	if c == nil {
		if a.Call == g.driving {
			g.driving = 0
		}
		return
	}
	delete(g.calls, a.Call)
	if a.Err != nil {
		c.lastErr = a.Err
		if m.now.Before(c.deadline) {
			m.retryMeta(c)
			return
		}
		c.done(nil, m.metaError(c))
		return
	}
	ans := &pb.MetaAnswer{}
	if c.propose != nil {
		res, err := wire.DecodeMetaResult(a.Result)
		if err != nil {
			c.done(nil, fmt.Errorf("remember: the metadata group did not apply the call: %w", err))
			return
		}
		ans.Result = res
		// Answered once the local disk holds what the group applied up to the entry too
		// (disk operations run in order): the offline tools and ScanAll on this member
		// then see what it was told is written.
		m.apply(applyOp{kind: opMerge}, func(DiskResult) { c.done(ans, nil) })
		return
	}
	ans.Records = m.readApplied(c.read)
	c.done(ans, nil)
}

// readApplied reads what r names from the applied metadata (after its read index).
func (m *Machine) readApplied(r *pb.ReplicaRead) []*pb.ReplicaRecord {
	recs := m.mg.recs
	if r.Scan {
		return toPBs(recs.scan(string(r.Prefix), string(r.After)), false)
	}
	out := make([]*pb.ReplicaRecord, len(r.Keys))
	for i, k := range r.Keys {
		e := recs.get(string(k))
		out[i] = toPB(&e, false)
	}
	return out
}

// metaError is the error of a call whose time is up: it is an ErrNoQuorum (callers retry
// it as they retry a quorum round that failed).
func (m *Machine) metaError(c *metaCall) error {
	cause := c.lastErr
	if cause == nil {
		cause = metaraft.ErrTimeout
	}
	return &MetaError{Tried: c.tried, Cause: cause}
}

// MetaError is the ErrNoQuorum of a metadata call the group did not answer in time: it has
// no leader (an election, or a majority of its voters unreachable), or the voters asked
// (Tried, for a member that is not one) did not answer.
type MetaError struct {
	Tried []NodeID
	Cause error
}

func (e *MetaError) Error() string {
	if len(e.Tried) > 0 {
		return fmt.Sprintf("remember: the metadata group did not answer (asked %v): %v: %v", e.Tried, e.Cause, ErrNoQuorum)
	}
	return fmt.Sprintf("remember: the metadata group did not answer: %v: %v", e.Cause, ErrNoQuorum)
}

// Unwrap makes errors.Is(err, ErrNoQuorum) hold, and the cause reachable.
func (e *MetaError) Unwrap() []error { return []error{ErrNoQuorum, e.Cause} }

// metaRetry is the pause before a call the group could not take (no leader, no voter
// answered) is made again.
const metaRetry = 50 * time.Millisecond

// retryMeta makes c again after metaRetry.
func (m *Machine) retryMeta(c *metaCall) {
	c.retryAt = m.now.Add(metaRetry)
	m.mg.retries = append(m.mg.retries, c)
}

// tickMetaGroup makes the calls due again, ticks the replica, and has the leader move the
// group's voters to the placement's.
func (m *Machine) tickMetaGroup() {
	g := &m.mg
	var due []*metaCall
	g.retries = slices.DeleteFunc(g.retries, func(c *metaCall) bool {
		if m.now.Before(c.retryAt) {
			return false
		}
		due = append(due, c)
		return true
	})
	for _, c := range due {
		m.callMeta(c)
	}
	m.startSeed(false)
	if g.member == nil {
		return
	}
	if g.member.Err() != nil {
		// A stopped replica does nothing, but its Tick moves its deadline on: without it the
		// machine asks to be ticked again at once until the restart (a Store spins for
		// metaRestartEvery; a simulation's time stands still).
		g.member.Tick(m.now)
		m.restartReplica()
		return
	}
	g.member.Tick(m.now)
	g.forgetJoins()
	m.driveVoters()
	m.recordVoters()
	m.announceReplica()
	m.pumpMeta()
	m.dropReplica()
}

// dropReplica drops this member's replica once it applied a configuration without it: its
// storage is reset and its copy of the metadata leaves the local disk, so a member outside
// the group holds no stale metadata. If the placement still names it a voter (it was
// removed while away), it starts again as a new replica (a new id, announced): a removed
// id never comes back.
func (m *Machine) dropReplica() {
	g := &m.mg
	if g.member == nil || m.place == nil || len(g.calls) > 0 {
		return
	}
	c := g.member.Configuration()
	if c.Index == 0 || c.Joint() || g.inGroup() {
		return // not added yet, or a change under way, or still a voter
	}
	m.resetReplica()
}

// resetReplica forgets this member's replica of the group, and starts a new one when the
// placement names it a voter.
func (m *Machine) resetReplica() {
	g := &m.mg
	if err := m.cfg.MetaStorage.Reset(); err != nil {
		g.err = fmt.Errorf("remember: reset the metadata group's storage: %w", err)
	}
	var recs []entry
	for _, k := range slices.Sorted(maps.Keys(g.recs.entries)) {
		e := g.recs.entries[k]
		e.rec.Key = k
		recs = append(recs, e)
	}
	calls := g.calls
	g.member, g.recs, g.calls, g.joins, g.driving = nil, nil, nil, nil, 0
	g.reset = true // a member that held a replica never founds the group
	g.recorded = 0
	if len(recs) > 0 {
		m.apply(applyOp{kind: opDiscard, recs: recs}, func(DiskResult) {})
	}
	for _, id := range slices.Sorted(maps.Keys(calls)) { // in call order: runs replay by seed
		m.retryMeta(calls[id]) // made again elsewhere
	}
	m.startMeta()
}

// metaRemoved takes a leader's word that this member's replica id was removed from the
// group (it was away when that was applied): the replica starts again as a new one.
func (m *Machine) metaRemoved(from NodeID, id uint64) {
	g := &m.mg
	if g.member == nil || g.member.ID() != id {
		return
	}
	if lead, _ := g.member.Leader(); lead != "" && lead != string(from) {
		return // it follows another leader, which counts it
	}
	m.resetReplica()
}

// recordVoters has the leader keep the group's voters in the metadata, under the
// metadata's configuration key (Layout.ConfigKey of the zero Unit) as a UnitConfig: Set
// the voters (the outgoing ones while a change is under way), Next the incoming ones. A
// leaving member reads it as it reads the units' (node/departure.go): it leaves once no
// configuration, the group's included, names it. The write is fenced by the configuration's
// log index, so an older leader's record never replaces a newer one.
//
// c.Index is the applied index, not the configuration's: the record's own write moves it,
// so an idle leader writes the record again and again (29 entries a second in a group of
// five, each synced on every voter; docs/design/metadata-raft.md, "Cost"). Writing it once
// a term and on a change shifts the simulation's schedules so that reminder soak seed 172
// met a fenced-off home handling a reminder — a fault this code had too (seeds 249 and
// 566, beyond the 200 CI runs; docs/reminders.md), mended since: the change comes next.
func (m *Machine) recordVoters() {
	g := &m.mg
	if g.recording {
		return
	}
	if lead, _ := g.member.IsLeader(); !lead {
		return
	}
	c := g.member.Configuration()
	if c.Index == 0 || c.Index <= g.recorded {
		return
	}
	names := func(vs []metaraft.Voter) []NodeID {
		out := make([]NodeID, len(vs))
		for i, v := range vs {
			out[i] = NodeID(v.Name)
		}
		return out
	}
	uc := UnitConfig{Set: names(c.Voters)}
	if c.Joint() {
		uc = UnitConfig{Set: names(c.Outgoing), Next: names(c.Voters)}
	}
	g.recording = true
	m.writeMeta(0, []Write{{Key: m.layout.ConfigKey(Unit{}), Value: uc.encode(), Epoch: c.Index}}, func(a Answer) {
		g.recording = false
		if a.Err == nil || errors.Is(a.Err, ErrFenced) {
			g.recorded = max(g.recorded, c.Index)
		}
	})
}

// announceReplica has a member that the placement names a voter, and whose replica waits
// to be added (it applied no configuration yet), tell the voters its replica's id once a
// second, for the leader to add it (metaJoined). A replica that applied a configuration
// without it was removed: it never announces that id (dropReplica starts a new one, which
// does). Runtime soak seed 198: a member restarted on a removed replica announced it
// before it dropped it; the leader added the removed id back and the group, joint with a
// voter that no longer existed, never elected a leader again.
func (m *Machine) announceReplica() {
	g := &m.mg
	if g.member == nil || m.place == nil || g.member.Configuration().Index > 0 || m.now.Before(g.joinAt) ||
		!slices.Contains(m.place.Meta(), m.self) {
		return
	}
	g.joinAt = m.now.Add(time.Second)
	for _, v := range m.place.Meta() {
		if v != m.self {
			m.send(v, &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_MetaJoin{MetaJoin: g.member.ID()}})
		}
	}
}

// metaJoined takes member from's announcement of its replica id (kept while the placement
// names it a voter: at most the voters' count).
func (m *Machine) metaJoined(from NodeID, id uint64) {
	if m.place == nil || !slices.Contains(m.place.Meta(), from) {
		return
	}
	if m.mg.joins == nil {
		m.mg.joins = map[NodeID]uint64{}
	}
	m.mg.joins[from] = id
	maps.DeleteFunc(m.mg.joins, func(p NodeID, _ uint64) bool { return !slices.Contains(m.place.Meta(), p) })
}

// forgetJoins drops the announcements of replicas the group counts: an announcement has
// done its part once the replica is added, and kept it would bring the id back after the
// group removed it (runtime soak seed 741: a member that left and came back was added
// again under the id of its first replica, which the group had removed and the member
// reset; the group went joint with a voter that no longer existed).
func (g *metaGroup) forgetJoins() {
	c := g.member.Configuration()
	maps.DeleteFunc(g.joins, func(_ NodeID, id uint64) bool {
		is := func(v metaraft.Voter) bool { return v.ID == id }
		return slices.ContainsFunc(c.Voters, is) || slices.ContainsFunc(c.Outgoing, is)
	})
}

// driveVoters has the group's leader change its voters to the placement's (the oldest Up
// members), one change at a time, at most once a second.
func (m *Machine) driveVoters() {
	g := &m.mg
	if g.member == nil || g.driving != 0 || m.place == nil || m.now.Before(g.driveAt) {
		return
	}
	if lead, _ := g.member.IsLeader(); !lead {
		return
	}
	c := g.member.Configuration()
	// Each voter of the placement by the replica it announced, else the one the group
	// counts. While one has neither, the group only grows (for up to metaJoinWait), so a
	// change of the placement never leaves it smaller than it was while the new voters
	// start.
	var target []metaraft.Voter
	unknown := false
	for _, p := range m.place.Meta() {
		switch id, joined := g.joins[p]; {
		case p == m.self:
			target = append(target, metaraft.Voter{Name: string(p), ID: g.member.ID()})
		case joined:
			target = append(target, metaraft.Voter{Name: string(p), ID: id})
		default:
			n := len(target)
			for _, v := range c.Voters {
				if v.Name == string(p) {
					target = append(target, v)
				}
			}
			unknown = unknown || len(target) == n
		}
	}
	switch {
	case !unknown:
		g.unknownSince = time.Time{}
	case g.unknownSince.IsZero():
		g.unknownSince = m.now
		fallthrough
	case m.now.Sub(g.unknownSince) < metaJoinWait:
		target = append(target, c.Voters...)
	}
	if len(target) == 0 {
		return
	}
	target = metaraft.SortVoters(target)
	if !c.Joint() && slices.Equal(c.Voters, target) {
		return
	}
	g.driveAt = m.now.Add(time.Second)
	if id := g.member.ID(); !slices.ContainsFunc(target, func(v metaraft.Voter) bool { return v.ID == id }) {
		// This leader is to go: it hands the group to a voter that stays, which drives the
		// change, rather than have it wait out an election after its removal.
		for _, v := range target {
			if slices.Contains(c.Voters, v) {
				g.member.TransferLeadership(v.ID)
				return
			}
		}
	}
	g.driving = g.member.ChangeVoters(m.now, target)
}

// pumpMeta hands out what the replica has: frames for the other voters, answers.
func (m *Machine) pumpMeta() {
	g := &m.mg
	if g.member == nil {
		return
	}
	for {
		rd := g.member.Ready()
		if rd.Empty() {
			return
		}
		for _, s := range rd.Sends {
			m.stats.MetaSent++
			m.stats.MetaSentBytes += uint64(len(s.Frame))
			m.send(NodeID(s.To), &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_Raft{Raft: s.Frame}})
		}
		for _, c := range rd.Configs {
			if m.cfg.OnMetaGroup != nil {
				m.cfg.OnMetaGroup(c)
			}
		}
		for _, r := range rd.Removed {
			m.send(NodeID(r.Name), &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_MetaRemoved{MetaRemoved: r.ID}})
		}
		for _, a := range rd.Answers {
			m.metaAnswered(a)
		}
	}
}

// receiveRaft takes a frame of the group from another voter. A member that holds no
// replica starts one when a leader reaches it (the leader added it).
func (m *Machine) receiveRaft(from NodeID, frame []byte) {
	g := &m.mg
	m.stats.MetaReceived++
	m.stats.MetaRecvBytes += uint64(len(frame))
	if g.member == nil {
		m.startMeta()
		if g.member == nil {
			m.stats.Malformed++ // not a voter: nothing to do with it
			return
		}
	}
	if err := g.member.Receive(string(from), frame); err != nil {
		m.stats.Malformed++
	}
	m.pumpMeta()
}

// metaWakeGroup returns when the group's part next needs a tick (zero: never).
func (m *Machine) metaWakeGroup() time.Time {
	g := &m.mg
	var next time.Time
	if g.member != nil {
		next = g.member.NextDeadline()
	}
	for _, c := range g.retries {
		if next.IsZero() || c.retryAt.Before(next) {
			next = c.retryAt
		}
	}
	return next
}

// forwardMeta sends c to a voter: the one that answered last, else the next in turn.
func (m *Machine) forwardMeta(c *metaCall) {
	voters := m.place.Meta()
	var to NodeID
	for range voters {
		v := voters[m.mg.ask%len(voters)]
		if v != m.self && !slices.Contains(c.tried, v) {
			to = v
			break
		}
		m.mg.ask++
	}
	if to == "" {
		if len(c.tried) > 0 && m.now.Before(c.deadline) {
			c.tried = c.tried[:0] // every voter was asked once: round again, a moment later
			m.retryMeta(c)
			return
		}
		c.done(nil, m.metaError(c))
		return
	}
	c.tried = append(c.tried, to)
	f := &forwarded{call: c, to: to, until: minTime(c.deadline, m.now.Add(m.metaTry()))}
	f.req = m.request(f)
	m.send(to, &pb.ReplicaEnvelope{RequestId: f.req, Msg: &pb.ReplicaEnvelope_MetaCall{MetaCall: &pb.MetaCall{Propose: c.propose, Read: c.read}}})
}

// nextPage asks voter to of a forwarded scan for the page after the records got so far.
func (m *Machine) nextPage(c *metaCall, to NodeID) {
	c.read = &pb.ReplicaRead{Scan: true, Prefix: c.read.Prefix, After: c.paged[len(c.paged)-1].Key}
	f := &forwarded{call: c, to: to, until: minTime(c.deadline, m.now.Add(m.metaTry()))}
	f.req = m.request(f)
	m.send(to, &pb.ReplicaEnvelope{RequestId: f.req, Msg: &pb.ReplicaEnvelope_MetaCall{MetaCall: &pb.MetaCall{Read: c.read}}})
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// forwarded is a metadata call sent to a voter, waiting for its answer.
type forwarded struct {
	req   uint64
	call  *metaCall
	to    NodeID
	until time.Time
}

func (f *forwarded) from(p NodeID) bool  { return p == f.to }
func (f *forwarded) deadline() time.Time { return f.until }

func (f *forwarded) answer(m *Machine, _ NodeID, env *pb.ReplicaEnvelope) {
	a, ok := env.Msg.(*pb.ReplicaEnvelope_MetaAnswer)
	if !ok {
		return // not an answer to this request: it keeps waiting
	}
	delete(m.pending, f.req)
	switch {
	case a.MetaAnswer.NotVoter:
		f.call.lastErr = fmt.Errorf("%s holds no part of the metadata group", f.to)
	case a.MetaAnswer.Error != "":
		f.call.lastErr = errors.New(a.MetaAnswer.Error)
	case a.MetaAnswer.More && len(a.MetaAnswer.Records) > 0:
		f.call.paged = append(f.call.paged, a.MetaAnswer.Records...)
		m.nextPage(f.call, f.to)
		return
	default:
		if i := slices.Index(m.place.Meta(), f.to); i >= 0 {
			m.mg.ask = i // ask it first next time (while it is a voter)
		}
		if len(f.call.paged) > 0 {
			a.MetaAnswer.Records = append(f.call.paged, a.MetaAnswer.Records...)
		}
		f.call.done(a.MetaAnswer, nil)
		return
	}
	m.mg.ask++
	m.forwardMeta(f.call)
}

func (f *forwarded) expire(m *Machine) {
	delete(m.pending, f.req)
	f.call.lastErr = fmt.Errorf("%s did not answer in %v", f.to, m.metaTry())
	m.mg.ask++
	m.forwardMeta(f.call)
}

// serveMetaCall makes a call a member that is not a voter forwarded here, and answers it.
func (m *Machine) serveMetaCall(from NodeID, req uint64, call *pb.MetaCall) {
	answer := func(a *pb.MetaAnswer) {
		m.send(from, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_MetaAnswer{MetaAnswer: a}})
	}
	if !m.mg.inGroup() {
		answer(&pb.MetaAnswer{NotVoter: true})
		return
	}
	m.callLocal(&metaCall{propose: call.Propose, read: call.Read, served: true, deadline: m.now.Add(m.metaTry() - m.metaTry()/8),
		done: func(a *pb.MetaAnswer, err error) {
			if err != nil {
				answer(&pb.MetaAnswer{Error: truncate(err.Error(), 4000)})
				return
			}
			// A scan's answer goes in pages of about a frame part.
			size := 0
			for i, r := range a.Records {
				if size += len(r.Key) + len(r.Value) + recordOverhead; size > partBytes && i > 0 {
					a.Records, a.More = a.Records[:i], true
					break
				}
			}
			answer(a)
		}})
}

// metaRestartEvery is how often a replica that stopped (its storage failed: a full disk)
// is started again from its storage.
const metaRestartEvery = 5 * time.Second

// restartReplica starts this member's replica again from its storage once metaRestartEvery
// passed since it stopped: a disk that had no room may have some now. Its calls were
// answered when it stopped.
func (m *Machine) restartReplica() {
	g := &m.mg
	if g.restartAt.IsZero() {
		g.restartAt = m.now.Add(metaRestartEvery)
		return
	}
	if m.now.Before(g.restartAt) {
		return
	}
	g.restartAt = time.Time{}
	recs := newMetaRecords(m.mirrorMeta)
	member, err := metaraft.New(m.metaRaftConfig(false), m.cfg.MetaStorage, recs, m.now)
	if err != nil {
		g.restartAt = m.now.Add(metaRestartEvery)
		return
	}
	g.member, g.recs, g.calls = member, recs, map[uint64]*metaCall{}
	m.pumpMeta()
}

// errNotVoter refuses a forwarded call on a member whose replica is no voter any more.
var errNotVoter = errors.New("remember: this member holds no part of the metadata group")

// errAnswerShape is a voter's answer that does not fit the call (a bug or a damaged frame).
var errAnswerShape = errors.New("remember: a voter's answer does not match the call")

// errMetaRound is a quorum round asked for the metadata, which is the group's (a bug).
var errMetaRound = errors.New("remember: the metadata is the metadata group's, not a replica set's")

// MetaStatus is this member's view of the metadata group.
type MetaStatus struct {
	Replica bool   // it holds a replica of the group (it is, or is about to be, a voter)
	Voter   bool   // its replica votes in the configuration it applied
	Leader  NodeID // the leader it knows of ("" for none)
	Term    uint64
	Applied uint64 // the log index its replica applied
	Voters  []metaraft.Voter
	Err     error // why it holds no replica though it should (a damaged storage), or why its replica stopped
	Seeding bool  // the metadata of its disk is not in the group yet (metaseed.go)
}

// MetaStatus returns this member's view of the metadata group.
func (m *Machine) MetaStatus() MetaStatus {
	g := &m.mg
	seeding := m.cfg.MetaSeed && (g.seed == nil || !g.seed.done)
	st := MetaStatus{Err: g.err, Seeding: seeding}
	if g.member == nil {
		return st
	}
	lead, term := g.member.Leader()
	c := g.member.Configuration()
	err := g.err
	if err == nil {
		err = g.member.Err() // stopped (a full disk, say) until it starts again
	}
	return MetaStatus{Replica: true, Voter: g.inGroup(), Leader: NodeID(lead), Term: term, Applied: c.Index, Voters: c.Voters, Err: err, Seeding: seeding}
}
