package remember

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember/metaraft"
	"github.com/shardmesh/shardmesh/trust"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// NodeID names a member: the text form of its peer id.
type NodeID = membership.NodeID

// Machine is one member's replica of the store and the client of the rounds it starts, as a
// deterministic state machine: it never touches a disk, a socket, a goroutine or the clock.
// Calls (Write, Get, Scan), peers' frames (Receive), disk results (DiskDone) and the time
// (Tick) go in; frames to send, disk operations and answers come out of Ready. Store drives
// one with Badger and libp2p; internal/sim drives one per simulated member, on a MemDisk.
//
// Everything the store decides is decided here or in applyOps: which members hold what
// (Placement, units.go), quorums, batching, read repair, anti-entropy, moves of replica
// sets, tombstone collection, and (on the disk) fencing and the merge rule.
type Machine struct {
	cfg    MachineConfig
	rng    *rand.Rand
	now    time.Time
	self   NodeID
	layout Layout

	clock uint64   // Lamport clock: the counter of this member's last write, or higher
	hold  holdings // digests of what the local replica holds, as the disk reported it
	keys  int      // how many keys it holds
	place *Placement

	// Who may send frames (MachineConfig.Gated): the admitted members, and the frames of
	// peers not admitted (yet), waiting for a moment.
	admitted map[NodeID]bool
	early    trust.Waiting[*pb.ReplicaEnvelope]

	nextCall CallID
	nextReq  uint64 // request ids on the wire
	nextDisk uint64
	internal map[CallID]func(Answer) // the machine's own calls (unit configurations, moves)

	writeQueue  []*writeCall
	readQueue   []*readCall
	writeRounds int // in flight
	readRounds  int
	rounds      roundLog // rounds in flight, by when they started (moves wait for them)
	reasks      []reask  // refilling replicas to ask again (machine_read.go)

	pending map[uint64]pendingRequest // rounds and exchanges waiting for peers, by request id
	disk    map[uint64]func(DiskResult)

	serving    int          // peers' reads being read from the disk
	serveQueue []servedRead // waiting for one to finish

	units     unitTable // the shard units this member hosts or has calls waiting on (units.go)
	moves     []*unitMove
	moveQueue []Unit
	moveSeq   uint64
	marks     map[Unit]moveMark
	dropped   map[Unit]dropFence // units this replica dropped, and under which configuration (dropfence.go)
	care      map[Unit]time.Time // units to look after, by when (care.go)
	us        unitSync
	rf        refill
	mg        metaGroup // this member's part in the metadata group (metagroup.go)

	out   Ready
	stats Stats
}

// MachineConfig configures a Machine: the placement, timing and identity part of Config.
type MachineConfig struct {
	// Self is this member.
	Self NodeID
	// Layout maps keys to units; nil: every key is metadata.
	Layout Layout
	// MaxMoves bounds the moves of replica sets this member runs at once (as the host of
	// their shards): sharding.store.max-simultaneous-moves. 0: DefaultMaxMoves.
	MaxMoves int
	// AntiEntropyInterval and Timeout: as in Config.
	AntiEntropyInterval time.Duration
	Timeout             time.Duration
	// Seed seeds the machine's random choices (anti-entropy peers and timing, the first
	// request id): Store seeds it at random, the simulation from its own seed.
	Seed uint64
	// OnRound, when set, is told the size of every round the machine starts (metrics).
	OnRound func(kind string, n int)
	// MetaStorage is where this member's replica of the metadata group is durable, when it
	// is a voter: it outlives the machine (a restarted member carries on from it).
	MetaStorage metaraft.Storage
	// MetaTick is the metadata group's clock unit (metaraft.Config.Tick; 0: its default).
	MetaTick time.Duration
	// Admit, when set, is asked before this member's replica of the metadata group takes a
	// proposal of about n bytes: an error (a *DiskFullError) refuses it at once rather
	// than have the replica stop on a Save that fails (Store: its disk guard).
	Admit func(n int) error
	// OnMetaGroup, when set, is told each configuration of the metadata group this member's
	// replica applies (logs, tests).
	OnMetaGroup func(metaraft.Configuration)
	// MetaSeed: the metadata on this disk is in no group (a store restored from a backup,
	// or written by a release before the metadata group): the machine merges it into the
	// group, and may found the group with it as its oldest voter (metaseed.go).
	MetaSeed bool
	// OnMetaSeeded, when set, is told when the seed is in the group (the store removes its
	// marker).
	OnMetaSeeded func()
	// Returning: the member ran before with this disk (it is not new): at its first
	// anti-entropy round it compares how many keys it opened with to what the peer holds,
	// and refills when it holds far fewer (machine_refill.go).
	Returning bool
	// Gated: only the members SetAdmitted names (and this one) may send frames — requests,
	// repairs and answers alike, which take effect here. A frame of any other peer waits up
	// to trust.AdmitGrace for SetAdmitted to name its sender (a member admitted a moment ago
	// sends before the news reaches every member), and is then dropped, counted
	// (Stats.NotAdmitted) and told in Ready.Refused. Off: every peer's frames are taken.
	Gated bool
}

// validate fills zero fields with their defaults and rejects what cannot work.
func (c *MachineConfig) validate() []error {
	var errs []error
	if c.Self == "" {
		errs = append(errs, configError("Self", "required"))
	}
	if c.Layout == nil {
		c.Layout = metaLayout{}
	}
	if c.MaxMoves == 0 {
		c.MaxMoves = DefaultMaxMoves
	} else if c.MaxMoves < 0 {
		errs = append(errs, configError("MaxMoves", "%d, want >= 1", c.MaxMoves))
	}
	if c.AntiEntropyInterval == 0 {
		c.AntiEntropyInterval = DefaultAntiEntropyInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	} else if c.Timeout < 0 {
		errs = append(errs, configError("Timeout", "%v, want > 0", c.Timeout))
	}
	return errs
}

// CallID names a call (Write, Get, Scan) of a Machine; its Answer carries it.
type CallID uint64

// Ready is what the machine wants done since the last call to Ready: frames for peers,
// operations for the local disk (carry applies out in order), and answers to calls. No
// field depends on the durability of another: a write is answered only once the disk
// reported it stored.
type Ready struct {
	Sends   []Send
	Disk    []DiskOp
	Answers []Answer
	// Refused are the senders of frames dropped because they are not admitted members
	// (MachineConfig.Gated), one entry per frame: to count and log.
	Refused []NodeID
	// Landed are the keys of records another member wrote that reached this member's disk
	// in a unit it hosts — a peer's write, or a sync that brought what this replica lacked —
	// once stored: the host learns of what it did not write itself without reading again.
	Landed []string
}

// Empty reports whether there is nothing to do.
func (r *Ready) Empty() bool {
	return len(r.Sends) == 0 && len(r.Disk) == 0 && len(r.Answers) == 0 && len(r.Refused) == 0 && len(r.Landed) == 0
}

// Send is a frame of the replica protocol for member To.
type Send struct {
	To    NodeID
	Frame []byte
}

// Answer ends a call: Write (Err only), Get (Record, Found), Scan and ScanAll (Records:
// live records, sorted by key; Missing: the members that did not answer, whose records may
// be left out).
type Answer struct {
	Call    CallID
	Record  Record
	Found   bool
	Records []Record
	Missing []NodeID
	Err     error
}

// NewMachine returns the machine of a replica whose disk holds st (read with the same
// Layout). cfg is validated (zero fields take their defaults).
func NewMachine(cfg MachineConfig, st DiskState, now time.Time) (*Machine, error) {
	if errs := cfg.validate(); len(errs) > 0 {
		return nil, fmt.Errorf("remember config: %w", errors.Join(errs...))
	}
	m := &Machine{
		cfg:      cfg,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x7265706c)),
		now:      now,
		self:     cfg.Self,
		layout:   cfg.Layout,
		hold:     st.holdings(cfg.Layout),
		keys:     st.entries,
		pending:  map[uint64]pendingRequest{},
		disk:     map[uint64]func(DiskResult){},
		internal: map[CallID]func(Answer){},
		units:    unitTable{},
		marks:    map[Unit]moveMark{},
		dropped:  map[Unit]dropFence{},
	}
	// Counters this member handed out just before a crash may have reached other replicas
	// without reaching its own disk: the gap keeps its next writes ordered after them.
	m.clock = st.maxCounter + clockRestartGap
	// Request ids start at a random point, so answers meant for a previous process of this
	// member match nothing.
	m.nextReq = m.rng.Uint64() >> 1
	m.us.next = now.Add(m.aeJitter())
	// A member that ran before and holds nothing lost its store (a disk replaced without
	// `shardctl data rebuild`): it refills all the same.
	if cfg.Returning && st.entries == 0 {
		m.StartRefill(now, "its store is empty though the member ran before (a replaced disk?)")
	}
	// A member that was a voter carries on with its replica of the metadata group.
	m.startMeta()
	return m, nil
}

// Ready returns and clears what the machine wants done.
func (m *Machine) Ready() Ready {
	r := m.out
	m.out = Ready{}
	return r
}

// Stats returns the machine's counters.
func (m *Machine) Stats() Stats { return m.stats }

// Self returns this member.
func (m *Machine) Self() NodeID { return m.self }

// SetAdmitted sets the members that may send frames from now on (MachineConfig.Gated):
// Joining, WeaklyUp, Up, Leaving, Exiting; not Down or Removed. The frames of those among
// them that were waiting are taken now, in the order they came.
func (m *Machine) SetAdmitted(now time.Time, members []NodeID) {
	m.now = now
	if m.admitted == nil {
		m.admitted = make(map[NodeID]bool, len(members))
	}
	clear(m.admitted)
	for _, id := range members {
		m.admitted[id] = true
	}
	if m.early.Len() == 0 {
		return
	}
	for _, h := range m.early.Release(m.admits) {
		m.receive(h.From, h.Item)
	}
}

// admits reports whether member from may send frames.
func (m *Machine) admits(from NodeID) bool { return !m.cfg.Gated || from == m.self || m.admitted[from] }

// Receive handles a frame of the replica protocol from member from. A frame that does not
// decode is counted, dropped and returned as an error.
func (m *Machine) Receive(now time.Time, from NodeID, frame []byte) error {
	env, err := wire.DecodeReplica(frame)
	if err != nil {
		m.stats.Malformed++
		return err
	}
	m.ReceiveEnvelope(now, from, env)
	return nil
}

// ReceiveEnvelope handles a decoded frame (wire.DecodeReplica validated it): at once when
// its sender may send frames, else once it may (MachineConfig.Gated).
func (m *Machine) ReceiveEnvelope(now time.Time, from NodeID, env *pb.ReplicaEnvelope) {
	m.now = now
	if m.admits(from) {
		m.receive(from, env)
		return
	}
	if !m.early.Hold(now, from, env, proto.Size(env)) {
		m.refuse(from)
	}
}

// refuse drops a frame of a peer that is not an admitted member.
func (m *Machine) refuse(from NodeID) {
	m.stats.NotAdmitted++
	m.out.Refused = append(m.out.Refused, from)
}

func (m *Machine) receive(from NodeID, env *pb.ReplicaEnvelope) {
	switch msg := env.Msg.(type) {
	case *pb.ReplicaEnvelope_Write:
		m.serveWrite(from, env.RequestId, msg.Write)
	case *pb.ReplicaEnvelope_Read:
		m.serveRead(from, env.RequestId, msg.Read)
	case *pb.ReplicaEnvelope_Repair:
		recs := fromPBs(msg.Repair.Records, false)
		m.observe(recs)
		if m.staleRepair(recs) {
			return
		}
		m.apply(applyOp{kind: opMerge, recs: recs}, func(DiskResult) {})
	case *pb.ReplicaEnvelope_UnitDigest:
		m.serveUnitDigests(from, env.RequestId, msg.UnitDigest.Units)
	case *pb.ReplicaEnvelope_Drop:
		m.serveDrop(from, env.RequestId, msg.Drop)
	case *pb.ReplicaEnvelope_Collect:
		m.serveCollect(unitOf(msg.Collect.Unit), msg.Collect.Hash)
	case *pb.ReplicaEnvelope_Synced:
		m.unitSynced(unitOf(msg.Synced))
	case *pb.ReplicaEnvelope_Raft:
		m.receiveRaft(from, msg.Raft)
	case *pb.ReplicaEnvelope_MetaJoin:
		m.metaJoined(from, msg.MetaJoin)
	case *pb.ReplicaEnvelope_MetaRemoved:
		m.metaRemoved(from, msg.MetaRemoved)
	case *pb.ReplicaEnvelope_MetaCall:
		m.serveMetaCall(from, env.RequestId, msg.MetaCall)
	default: // answers
		p := m.pending[env.RequestId]
		if p == nil || !p.from(from) {
			m.stats.LateAnswers++
			return
		}
		p.answer(m, from, env)
	}
}

// DiskDone hands the machine the result of a disk operation it asked for.
func (m *Machine) DiskDone(now time.Time, res DiskResult) {
	m.now = now
	done := m.disk[res.ID]
	if done == nil {
		return
	}
	delete(m.disk, res.ID)
	for i := range res.changes {
		c := &res.changes[i]
		m.hold.update(c.key, &c.before, &c.after)
		switch {
		case c.before.absent() && !c.after.absent():
			m.keys++
		case !c.before.absent() && c.after.absent():
			m.keys--
		}
		m.clock = max(m.clock, c.after.rec.Version.Counter)
	}
	for _, a := range res.applied {
		m.stats.Refused += uint64(len(a.refused))
		m.stats.Merged += uint64(a.changed)
	}
	done(res)
}

// Tick advances the machine's time: rounds past their timeout fail, anti-entropy runs, the
// frames of peers that were not admitted in time are refused.
func (m *Machine) Tick(now time.Time) {
	m.now = now
	for _, h := range m.early.Expire(now) {
		m.refuse(h.From)
	}
	var expired []uint64
	for id, p := range m.pending {
		if !now.Before(p.deadline()) {
			expired = append(expired, id)
		}
	}
	slices.Sort(expired) // the order answers go out in must not depend on a map's
	for _, id := range expired {
		if p := m.pending[id]; p != nil {
			p.expire(m)
		}
	}
	m.tickReasks()
	m.tickMetaGroup()
	m.tickRefill()
	m.tickUnits()
}

// NextDeadline returns when the machine next needs a Tick (a round's timeout, anti-entropy,
// a waiting frame's grace), so a runtime can sleep until then.
func (m *Machine) NextDeadline() time.Time {
	var next time.Time
	if m.cfg.AntiEntropyInterval > 0 {
		next = m.us.wake()
	}
	for _, a := range m.reasks {
		if next.IsZero() || a.at.Before(next) {
			next = a.at
		}
	}
	for _, w := range []time.Time{m.units.wake(), m.careWake(), m.metaWakeGroup(), m.refillWake()} {
		if !w.IsZero() && (next.IsZero() || w.Before(next)) {
			next = w
		}
	}
	if d := m.early.Deadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
		next = d
	}
	for _, p := range m.pending {
		if d := p.deadline(); next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next
}

// pendingRequest is a round or exchange waiting for peers' answers to one request id.
type pendingRequest interface {
	// from reports whether member p was asked (only their answers count).
	from(p NodeID) bool
	answer(m *Machine, from NodeID, env *pb.ReplicaEnvelope)
	deadline() time.Time
	// expire ends it at its deadline.
	expire(m *Machine)
}

// request registers p under a new request id.
func (m *Machine) request(p pendingRequest) uint64 {
	m.nextReq++
	if m.nextReq == 0 {
		m.nextReq++
	}
	m.pending[m.nextReq] = p
	return m.nextReq
}

func (m *Machine) send(to NodeID, env *pb.ReplicaEnvelope) {
	m.sendFrame(to, wire.AppendReplica(nil, env))
}

func (m *Machine) sendFrame(to NodeID, frame []byte) {
	m.out.Sends = append(m.out.Sends, Send{To: to, Frame: frame})
}

// disk asks for a disk operation; done gets its result.
func (m *Machine) diskOp(op DiskOp, done func(DiskResult)) {
	m.nextDisk++
	op.ID = m.nextDisk
	m.disk[op.ID] = done
	m.out.Disk = append(m.out.Disk, op)
}

// apply asks the disk to apply one operation.
func (m *Machine) apply(op applyOp, done func(DiskResult)) {
	m.diskOp(DiskOp{Kind: DiskApply, apply: []applyOp{op}}, done)
}

// answerCall answers a call: the caller's through Ready, the machine's own at once.
func (m *Machine) answerCall(a Answer) {
	if done := m.internal[a.Call]; done != nil {
		delete(m.internal, a.Call)
		done(a)
		return
	}
	m.out.Answers = append(m.out.Answers, a)
}

// newCall returns the id of a new call.
func (m *Machine) newCall() CallID {
	m.nextCall++
	return m.nextCall
}

// own makes call a call of the machine's own: its answer goes to done. It is registered
// before the call starts (ownGet, ownScan, ownWrite): a call may be answered before it
// returns (a metadata read on the group's only voter, a refusal), and an answer with no
// owner yet would go to the machine's caller, which knows no such call.
func (m *Machine) own(call CallID, done func(Answer)) { m.internal[call] = done }

// ownGet makes a Get of the machine's own; done gets its answer.
func (m *Machine) ownGet(key string, fence uint64, done func(Answer)) {
	id := m.newCall()
	m.own(id, done)
	m.get(id, key, fence)
}

// ownScan makes a Scan of the machine's own; done gets its answer.
func (m *Machine) ownScan(prefix string, done func(Answer)) {
	id := m.newCall()
	m.own(id, done)
	m.scan(id, prefix)
}

// ownWrite makes a Write of the machine's own; done gets its answer.
func (m *Machine) ownWrite(ws []Write, done func(Answer)) {
	id := m.newCall()
	m.own(id, done)
	m.write(id, ws)
}

// tick returns the next counter of this member's clock.
func (m *Machine) tick() uint64 {
	m.clock++
	return m.clock
}

// observe advances the clock past every counter in recs.
func (m *Machine) observe(recs []entry) {
	for i := range recs {
		m.clock = max(m.clock, recs[i].rec.Version.Counter)
	}
}

// Stats counts what a store did since it opened.
type Stats struct {
	Writes        uint64        // writes of Write calls
	WriteRounds   uint64        // rounds (one frame per peer) they went out in
	Reads         uint64        // keys of Get and GetFenced calls
	ReadRounds    uint64        // rounds they went out in
	Scans         uint64        // Scan calls
	Commits       uint64        // local group commits (one fsync each; Store only)
	CommitTime    time.Duration // time spent in them (Store only)
	Refused       uint64        // writes this replica refused for fencing
	Merged        uint64        // entries read repair and anti-entropy changed here
	Repairs       uint64        // records sent to replicas that lagged (read repair, anti-entropy)
	SyncRounds    uint64        // anti-entropy rounds that found differences
	Malformed     uint64        // frames from peers that did not decode
	NotAdmitted   uint64        // frames dropped: their sender is not an admitted member (Gated)
	FramesDropped uint64        // frames not sent (peer unreachable, queue full; Store only)
	LateAnswers   uint64        // answers that came after their round ended
	Refilled      uint64        // refills finished
	Moves         uint64        // moves of replica sets finished (as a unit's host)
	MovesFailed   uint64        // moves that failed a step (tried again)
	MovesStarted  uint64        // moves started (as a unit's host or caretaker; a failed one again)
	Abandoned     uint64        // moves given up because the unit's host changed
	Copied        uint64        // records copied to new replicas by moves
	Dropped       uint64        // units this replica dropped (no longer one of their replicas)
	UnitSyncs     uint64        // shard units whose replicas differed and were synced
	Collected     uint64        // tombstones collected here
	MetaSent      uint64        // frames of the metadata group sent (raft messages to other voters)
	MetaSentBytes uint64        // their bytes
	MetaReceived  uint64        // frames of the metadata group received
	MetaRecvBytes uint64        // their bytes
}
