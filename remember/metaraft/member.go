package metaraft

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"strings"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

var (
	// ErrNoLeader says the group has no leader this member knows of (an election, a
	// partition, a group that lost its majority): nothing was proposed; callers retry.
	ErrNoLeader = errors.New("metaraft: the metadata group has no leader now: retry")
	// ErrTimeout says a call was not answered in time; a write may still be committed
	// (writes are puts: retrying is safe).
	ErrTimeout = errors.New("metaraft: the metadata group did not answer in time: retry")
	// ErrOtherReplica says a frame is for another replica of this member: the one it was
	// before its storage was lost (the group still names it until the leader replaces it).
	ErrOtherReplica = errors.New("meant for this member's replica of before its storage was lost")
)

// Config configures a Member.
type Config struct {
	// Self names the member (its member id).
	Self string
	// Found makes a member with an empty storage found a group of itself alone. Exactly one
	// member of a new cluster founds (the one that forms it); the others start empty and
	// join when ChangeVoters names them.
	Found bool
	// Tick is raft's clock unit (100 ms); ElectionTicks (10) and HeartbeatTicks (1) are
	// counted in it.
	Tick                          time.Duration
	ElectionTicks, HeartbeatTicks int
	// Timeout fails a call not answered in time (5 s).
	Timeout time.Duration
	// SnapshotEvery compacts the log into a snapshot every so many applied entries (1,000).
	SnapshotEvery uint64
}

func (c *Config) defaults() {
	if c.Tick <= 0 {
		c.Tick = 100 * time.Millisecond
	}
	if c.ElectionTicks <= 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks <= 0 {
		c.HeartbeatTicks = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 1000
	}
}

// Send is a frame for a peer.
type Send struct {
	To    string
	Frame []byte
}

// StateMachine is what the group replicates. Apply runs every committed proposal, in log
// order, on every member: it must be deterministic (the same data at the same index gives
// the same state and result everywhere). Snapshot and Restore carry the applied state in
// the group's snapshots.
type StateMachine interface {
	Apply(index uint64, data []byte) (result []byte)
	Snapshot() ([]byte, error)
	Restore(data []byte) error
}

// Answer answers a call (Propose, ReadIndex, ChangeVoters).
type Answer struct {
	Call   uint64
	Err    error
	Result []byte // Propose: what Apply returned for it
	Index  uint64 // the log index the answer is at (Propose: its entry; ReadIndex: the read index)
	Term   uint64 // Propose: its entry's term
}

// Voter is a voter of the group: a member's name and the id of its replica (its storage's:
// a member whose storage was lost comes back as another replica, with another id).
type Voter struct {
	Name string `json:"name"`
	ID   uint64 `json:"id"`
}

// Configuration is the group's configuration from log index Index on: Voters, and while
// it is joint, Outgoing (the set it leaves); each sorted by name, then id.
type Configuration struct {
	Index    uint64
	Voters   []Voter
	Outgoing []Voter
}

// Has reports whether name votes in c (in either set while it is joint).
func (c Configuration) Has(name string) bool {
	is := func(v Voter) bool { return v.Name == name }
	return slices.ContainsFunc(c.Voters, is) || slices.ContainsFunc(c.Outgoing, is)
}

// Joint reports whether the configuration is a joint one.
func (c Configuration) Joint() bool { return len(c.Outgoing) > 0 }

// Ready is what a member hands out: frames to send, answers and configurations.
type Ready struct {
	Sends   []Send
	Answers []Answer
	Configs []Configuration
	// Removed are replicas that sent this leader frames though the group removed them:
	// they may not know (they were away when it did). Tell them (Removed), so that they
	// start again as new replicas.
	Removed []Voter
}

// Empty reports whether there is nothing to hand out.
func (r *Ready) Empty() bool {
	return len(r.Sends)+len(r.Answers)+len(r.Configs)+len(r.Removed) == 0
}

// call is a call waiting for its answer.
type call struct {
	id       uint64
	deadline time.Time
	target   []Voter // ChangeVoters
	index    uint64  // ReadIndex: the read index, once known
}

// Member is one voter's replica of the metadata group.
type Member struct {
	cfg   Config
	id    uint64
	by    string // names this incarnation's proposals (Self#start)
	rn    *raft.RawNode
	st    Storage
	names map[uint64]string

	sm       StateMachine
	applied  uint64
	snapped  uint64 // the index of the last snapshot taken
	snapNext uint64 // the applied index from which the next one is taken (after a failed one: sooner)
	snapErr  error  // why the last snapshot or compaction failed (nil: it did not)
	conf     *pb.ConfState
	lastTick time.Time

	nextCall uint64
	calls    map[uint64]*call
	writes   map[uint64]uint64 // proposal seq → call
	reads    []*call           // ReadIndex calls with a read index, waiting to apply that far
	changes  []*call
	out      Ready
	err      error // why the member stopped (nil: it runs)

	ackEarly bool // tests only (the negative control): answer writes when proposed
}

var logger raft.Logger = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// New returns the member that carries on from storage st (empty: a new member, which
// founds the group when cfg.Found, else waits to be added), applying the group's log to
// sm. sm must hold nothing yet: the snapshot in st restores it, and the committed entries
// after the snapshot are applied to it again.
func New(cfg Config, st Storage, sm StateMachine, now time.Time) (_ *Member, err error) {
	cfg.defaults()
	if cfg.Self == "" {
		return nil, errors.New("metaraft: a member needs a name (Config.Self)")
	}
	id, err := st.ID()
	if err != nil {
		return nil, fmt.Errorf("metaraft: read the replica id of %s: %w", cfg.Self, err)
	}
	m := &Member{cfg: cfg, id: id, by: fmt.Sprintf("%s#%d", cfg.Self, now.UnixNano()), st: st,
		names: map[uint64]string{}, sm: sm, conf: pb.EnsureConfState(nil), lastTick: now, calls: map[uint64]*call{},
		writes: map[uint64]uint64{}}
	m.names[m.id] = cfg.Self
	defer func() {
		if m.recovered(recover()) {
			err = m.err
		}
	}()
	snap, err := st.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("metaraft: read the snapshot of %s: %w", cfg.Self, err)
	}
	if !raft.IsEmptySnap(snap) {
		if err := m.restore(snap); err != nil {
			return nil, err
		}
	}
	rc := &raft.Config{ID: m.id, ElectionTick: cfg.ElectionTicks, HeartbeatTick: cfg.HeartbeatTicks, Storage: st,
		Applied: m.applied, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
		StepDownOnRemoval: true, Logger: logger}
	if m.rn, err = raft.NewRawNode(rc); err != nil {
		return nil, fmt.Errorf("metaraft: start %s: %w", cfg.Self, err)
	}
	last, err := st.LastIndex()
	if err != nil {
		return nil, fmt.Errorf("metaraft: read the log of %s: %w", cfg.Self, err)
	}
	if cfg.Found && last == 0 && raft.IsEmptySnap(snap) {
		if err := m.rn.Bootstrap([]raft.Peer{{ID: m.id, Context: []byte(cfg.Self)}}); err != nil {
			return nil, fmt.Errorf("metaraft: found the group at %s: %w", cfg.Self, err)
		}
	}
	m.process()
	if m.err != nil {
		return nil, m.err
	}
	return m, nil
}

// restore takes the state of snapshot snap.
func (m *Member) restore(snap *pb.Snapshot) error {
	s, err := decodeSnapshot(snap.GetData())
	if err != nil {
		return err
	}
	if err := m.sm.Restore(s.Data); err != nil {
		return fmt.Errorf("metaraft: restore the snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
	}
	for _, v := range s.Names {
		m.names[v.ID] = v.Name
	}
	md := snap.GetMetadata()
	m.applied, m.snapped, m.conf = md.GetIndex(), md.GetIndex(), md.GetConfState()
	m.out.Configs = append(m.out.Configs, m.configuration(m.applied))
	return nil
}

// Tick advances the member's clock to now: raft's ticks, and calls that time out.
func (m *Member) Tick(now time.Time) {
	if m.err != nil {
		m.lastTick = now // a stopped member does nothing: NextDeadline moves on
		return
	}
	defer func() { m.recovered(recover()) }()
	for !now.Before(m.lastTick.Add(m.cfg.Tick)) {
		m.rn.Tick()
		m.lastTick = m.lastTick.Add(m.cfg.Tick)
	}
	var late []uint64
	for id, c := range m.calls {
		if !now.Before(c.deadline) {
			late = append(late, id)
		}
	}
	slices.Sort(late) // answers in call order, whatever the map's
	for _, id := range late {
		m.answer(Answer{Call: id, Err: ErrTimeout})
	}
	m.process()
}

// NextDeadline returns when Tick has something to do.
func (m *Member) NextDeadline() time.Time {
	next := m.lastTick.Add(m.cfg.Tick)
	for _, c := range m.calls {
		if c.deadline.Before(next) {
			next = c.deadline
		}
	}
	return next
}

// Receive takes a frame from peer from.
func (m *Member) Receive(from string, frame []byte) (err error) {
	if m.err != nil {
		return m.err
	}
	defer func() {
		if m.recovered(recover()) {
			err = m.err
		}
	}()
	msg := &pb.Message{}
	if err := proto.Unmarshal(frame, msg); err != nil {
		return fmt.Errorf("metaraft: damaged frame from %s: %w", from, err)
	}
	// Proposals and read requests keep their first sender when a follower forwards them on
	// (to the leader it knows); every other message comes from its sender.
	forwarded := msg.GetType() == pb.MsgProp || msg.GetType() == pb.MsgReadIndex
	if raft.IsLocalMsg(msg.GetType()) {
		return fmt.Errorf("metaraft: a %v frame from %s: a local message", msg.GetType(), from)
	}
	if err := checkFrame(m.id, msg); err != nil {
		return fmt.Errorf("metaraft: a damaged %v frame from %s: %w", msg.GetType(), from, err)
	}
	if msg.GetTo() != m.id {
		return fmt.Errorf("metaraft: a %v frame from %s for replica %x, this one is %x: %w", msg.GetType(), from, msg.GetTo(), m.id, ErrOtherReplica)
	}
	if !forwarded {
		if name, known := m.names[msg.GetFrom()]; known && name != from {
			return fmt.Errorf("metaraft: a %v frame from %s names replica %x, which is %s's", msg.GetType(), from, msg.GetFrom(), name)
		}
		m.names[msg.GetFrom()] = from // a new replica learns who the leader is, to answer it
		m.noteRemoved(from, msg.GetFrom())
	}
	// A response from a member no longer in the configuration, or a proposal forwarded
	// while this member cannot take it, is not a bad frame: raft drops it.
	if err := m.rn.Step(msg); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) && !errors.Is(err, raft.ErrProposalDropped) {
		return fmt.Errorf("metaraft: frame from %s: %w", from, err)
	}
	m.process()
	return m.err
}

// noteRemoved has a leader report replica id of member from when the group removed it: it
// is in no set of the configuration applied here, and no change of the configuration is
// under way (every entry of the log is applied), so the removal is committed and no
// configuration to come can hold id (ids are never added again).
func (m *Member) noteRemoved(from string, id uint64) {
	if lead, _ := m.IsLeader(); !lead || m.conf == nil {
		return
	}
	if slices.Contains(m.conf.GetVoters(), id) || slices.Contains(m.conf.GetVotersOutgoing(), id) || slices.Contains(m.conf.GetLearners(), id) {
		return
	}
	if last, err := m.st.LastIndex(); err != nil || last != m.applied {
		return
	}
	v := Voter{Name: from, ID: id}
	if !slices.Contains(m.out.Removed, v) {
		m.out.Removed = append(m.out.Removed, v)
	}
}

func (m *Member) newCall(now time.Time) *call {
	m.nextCall++
	c := &call{id: m.nextCall, deadline: now.Add(m.cfg.Timeout)}
	m.calls[c.id] = c
	return c
}

// Propose appends data to the group's log; it is answered, with what the state machine's
// Apply returned, once the entry is committed and applied here.
func (m *Member) Propose(now time.Time, data []byte) uint64 {
	c := m.newCall(now)
	if m.refused(c) {
		return c.id
	}
	defer func() { m.recovered(recover()) }()
	m.nextCall++ // the proposal's sequence: unique in this incarnation
	seq := m.nextCall
	err := m.rn.Propose((&proposal{by: m.by, seq: seq, data: data}).encode())
	switch {
	case err != nil:
		m.answer(Answer{Call: c.id, Err: ErrNoLeader})
	case m.ackEarly:
		m.answer(Answer{Call: c.id})
	default:
		m.writes[seq] = c.id
	}
	m.process()
	return c.id
}

// ReadIndex is answered once the state machine applied every entry committed before the
// call (the leader confirms it still leads with a heartbeat round to a quorum): a read of
// the state machine made then is linearizable.
func (m *Member) ReadIndex(now time.Time) uint64 {
	c := m.newCall(now)
	if m.refused(c) {
		return c.id
	}
	defer func() { m.recovered(recover()) }()
	if m.rn.BasicStatus().Lead == raft.None {
		m.answer(Answer{Call: c.id, Err: ErrNoLeader})
		return c.id
	}
	m.rn.ReadIndex(m.readCtx(c.id))
	m.process()
	return c.id
}

// readCtx names a read index request: this incarnation and the call.
func (m *Member) readCtx(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(m.by), id)
}

// ChangeVoters moves the group to voters set (joint consensus, left automatically); it is
// answered once the group's configuration is set alone. Only one change runs at a time:
// a change proposed during another is dropped by the leader, and the call times out
// unless the group reaches set anyway (callers retry).
func (m *Member) ChangeVoters(now time.Time, set []Voter) uint64 {
	c := m.newCall(now)
	if m.refused(c) {
		return c.id
	}
	defer func() { m.recovered(recover()) }()
	c.target = SortVoters(slices.Clone(set))
	for _, v := range c.target {
		m.names[v.ID] = v.Name
	}
	if len(c.target) == 0 {
		m.answer(Answer{Call: c.id, Err: errors.New("metaraft: a configuration needs at least one voter")})
		return c.id
	}
	if m.reached(c.target) {
		m.answer(Answer{Call: c.id, Index: m.applied})
		return c.id
	}
	cc := &pb.ConfChangeV2{Transition: pb.ConfChangeTransitionAuto.Enum(), Context: mustJSON(c.target)}
	// Every voter of the target is named (adding a voter is idempotent), so a change
	// computed from a stale configuration never leaves the group without voters.
	for _, v := range c.target {
		cc.Changes = append(cc.Changes, &pb.ConfChangeSingle{Type: pb.ConfChangeAddNode.Enum(), NodeId: new(v.ID)})
	}
	for _, id := range m.conf.GetVoters() {
		if !slices.ContainsFunc(c.target, func(v Voter) bool { return v.ID == id }) {
			cc.Changes = append(cc.Changes, &pb.ConfChangeSingle{Type: pb.ConfChangeRemoveNode.Enum(), NodeId: new(id)})
		}
	}
	if err := m.rn.ProposeConfChange(cc); err != nil {
		m.answer(Answer{Call: c.id, Err: ErrNoLeader})
		return c.id
	}
	m.changes = append(m.changes, c)
	m.process()
	return c.id
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("metaraft: encode %T: %v", v, err)) // string slices always encode
	}
	return b
}

// SortVoters sorts set by name, then id, without repeats.
func SortVoters(set []Voter) []Voter {
	slices.SortFunc(set, func(a, b Voter) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return slices.Compact(set)
}

// reached reports whether the applied configuration is set alone.
func (m *Member) reached(set []Voter) bool {
	c := m.configuration(m.applied)
	return !c.Joint() && slices.Equal(c.Voters, SortVoters(slices.Clone(set)))
}

// TransferLeadership asks the group to make to its leader (this member leads; to is a voter
// of the configuration): it stops taking proposals until to has caught up and campaigned,
// or an election timeout passed. A leader that the next configuration leaves out hands the
// group on this way rather than have it wait out an election.
func (m *Member) TransferLeadership(to uint64) {
	if m.err != nil {
		return
	}
	defer func() { m.recovered(recover()) }()
	m.rn.TransferLeader(to)
	m.process()
}

// ID returns this replica's id in the group (its storage's).
func (m *Member) ID() uint64 { return m.id }

// configuration returns the applied configuration, named.
func (m *Member) configuration(index uint64) Configuration {
	name := func(ids []uint64) []Voter {
		var out []Voter
		for _, id := range ids {
			n, ok := m.names[id]
			if !ok {
				n = fmt.Sprintf("%x", id)
			}
			out = append(out, Voter{Name: n, ID: id})
		}
		return SortVoters(out)
	}
	return Configuration{Index: index, Voters: name(m.conf.GetVoters()), Outgoing: name(m.conf.GetVotersOutgoing())}
}

// Configuration returns the configuration applied here (Index: the applied index).
func (m *Member) Configuration() Configuration { return m.configuration(m.applied) }

// Leader returns the leader this member knows of ("" for none) and its term.
func (m *Member) Leader() (string, uint64) {
	s := m.rn.BasicStatus()
	if m.err != nil {
		return "", s.GetTerm()
	}
	return m.names[s.Lead], s.GetTerm()
}

// IsLeader reports whether this member leads, and in which term.
func (m *Member) IsLeader() (bool, uint64) {
	s := m.rn.BasicStatus()
	return m.err == nil && s.RaftState == raft.StateLeader, s.GetTerm()
}

// AppliedIndex returns the index applied here.
func (m *Member) AppliedIndex() uint64 { return m.applied }

// Ready hands out what the member has for its caller.
func (m *Member) Ready() Ready {
	out := m.out
	m.out = Ready{}
	return out
}

func (m *Member) answer(a Answer) {
	delete(m.calls, a.Call)
	m.out.Answers = append(m.out.Answers, a)
}

// process runs raft's Readys: stores, sends, applies, then answers what waited.
func (m *Member) process() {
	for m.rn.HasReady() {
		rd := m.rn.Ready()
		if err := m.st.Save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
			// The disk failed: nothing of this Ready is sent or applied; the member stops.
			m.stop(fmt.Errorf("store the raft state: %w", err))
			return
		}
		if rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot) {
			if err := m.restore(rd.Snapshot); err != nil {
				m.stop(err)
				return
			}
		}
		for _, msg := range rd.Messages {
			if m.send(msg); m.err != nil {
				return
			}
		}
		for _, e := range rd.CommittedEntries {
			m.apply(e)
		}
		for _, rs := range rd.ReadStates {
			m.readAt(rs)
		}
		m.rn.Advance(rd)
	}
	m.serveReads()
	m.compact()
}

// send hands msg out (or stops the member when it cannot).
func (m *Member) send(msg *pb.Message) {
	to, ok := m.names[msg.GetTo()]
	if !ok {
		return // a member not named yet (raft resends)
	}
	frame, err := proto.Marshal(msg)
	if err != nil {
		m.stop(fmt.Errorf("encode %v: %w", msg.GetType(), err))
		return
	}
	if msg.GetType() == pb.MsgSnap {
		if msg.GetSnapshot().GetMetadata().GetIndex() < m.applied {
			// A snapshot older than the state applied here may predate the configuration
			// that added the member it is for, which would refuse it: take one of the
			// applied state (the log stays) and have raft send that one instead.
			if !m.snapshot() {
				return
			}
			m.rn.ReportSnapshot(msg.GetTo(), raft.SnapshotFailure)
			return
		}
		// The frame may be lost: have raft probe again rather than wait for it forever.
		defer m.rn.ReportSnapshot(msg.GetTo(), raft.SnapshotFinish)
	}
	m.out.Sends = append(m.out.Sends, Send{To: to, Frame: frame})
}

func (m *Member) apply(e *pb.Entry) {
	m.applied = e.GetIndex()
	switch e.GetType() {
	case pb.EntryNormal:
		if len(e.GetData()) == 0 {
			return // a new leader's empty entry
		}
		p, err := decodeProposal(e.GetData())
		if err != nil {
			return // TODO(spike): count it; every member skips it alike
		}
		result := m.sm.Apply(e.GetIndex(), p.data)
		if p.by == m.by {
			if id, ok := m.writes[p.seq]; ok {
				delete(m.writes, p.seq)
				if _, waiting := m.calls[id]; waiting {
					m.answer(Answer{Call: id, Result: result, Index: e.GetIndex(), Term: e.GetTerm()})
				}
			}
		}
	case pb.EntryConfChange, pb.EntryConfChangeV2:
		var cc pb.ConfChangeI
		if e.GetType() == pb.EntryConfChange {
			v1 := &pb.ConfChange{}
			if proto.Unmarshal(e.GetData(), v1) != nil {
				return
			}
			m.names[v1.GetNodeId()] = string(v1.GetContext()) // Bootstrap's: the founder's name
			cc = v1
		} else {
			v2 := &pb.ConfChangeV2{}
			if proto.Unmarshal(e.GetData(), v2) != nil {
				return
			}
			var voters []Voter
			if json.Unmarshal(v2.GetContext(), &voters) == nil {
				for _, v := range voters {
					m.names[v.ID] = v.Name
				}
			}
			cc = v2
		}
		m.conf = m.rn.ApplyConfChange(cc)
		conf := m.configuration(e.GetIndex())
		m.out.Configs = append(m.out.Configs, conf)
		m.changes = slices.DeleteFunc(m.changes, func(c *call) bool {
			if _, waiting := m.calls[c.id]; !waiting {
				return true
			}
			if !conf.Joint() && slices.Equal(conf.Voters, c.target) {
				m.answer(Answer{Call: c.id, Index: e.GetIndex()})
				return true
			}
			return false
		})
	}
}

// readAt takes the read index raft confirmed for a Get.
func (m *Member) readAt(rs raft.ReadState) {
	ctx := rs.RequestCtx
	if len(ctx) != len(m.by)+8 || string(ctx[:len(m.by)]) != m.by {
		return // another incarnation's
	}
	c, ok := m.calls[binary.BigEndian.Uint64(ctx[len(m.by):])]
	if !ok || c.index != 0 {
		return
	}
	c.index = max(rs.Index, 1)
	m.reads = append(m.reads, c)
}

// serveReads answers the ReadIndex calls whose read index is applied.
func (m *Member) serveReads() {
	m.reads = slices.DeleteFunc(m.reads, func(c *call) bool {
		if _, waiting := m.calls[c.id]; !waiting {
			return true
		}
		if c.index > m.applied {
			return false
		}
		m.answer(Answer{Call: c.id, Index: c.index})
		return true
	})
}

// compact takes a snapshot every SnapshotEvery applied entries.
func (m *Member) compact() {
	if m.applied < max(m.snapped+m.cfg.SnapshotEvery, m.snapNext) {
		return
	}
	if !m.snapshot() {
		return
	}
	if err := m.st.Compact(m.applied); err != nil {
		m.snapFailed(fmt.Errorf("compact the log to %d: %w", m.applied, err))
	}
}

// snapshot keeps a snapshot of the applied state (false: it could not). A snapshot and a
// compaction only keep the log short: one that fails (a full disk) leaves the member
// running on its log, and it tries again a quarter of SnapshotEvery entries later.
func (m *Member) snapshot() bool {
	data, err := m.sm.Snapshot()
	if err == nil {
		data, err = encodeSnapshot(data, m.names)
	}
	if err == nil {
		_, err = m.st.CreateSnapshot(m.applied, m.conf, data)
	}
	if err != nil {
		m.snapFailed(fmt.Errorf("snapshot at %d: %w", m.applied, err))
		return false
	}
	m.snapped, m.snapErr = m.applied, nil
	return true
}

// snapFailed notes a snapshot or compaction that failed.
func (m *Member) snapFailed(err error) {
	m.snapErr = err
	m.snapNext = m.applied + max(m.cfg.SnapshotEvery/4, 1)
}

// SnapshotErr says why the last snapshot or compaction failed (nil: it did not): the
// member runs on, its log longer until one succeeds.
func (m *Member) SnapshotErr() error { return m.snapErr }
