package metaraft

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/dgraph-io/badger/v4"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A deterministic simulation of a metadata group: members with their own storage, a seeded
// network that delays, reorders and drops frames and partitions members, crashes and
// restarts (a new Member from the storage the old one wrote), and a checker that runs
// after every event. etcd's raft draws election timeouts from crypto/rand; the test makes
// that deterministic with cryptotest.SetGlobalRandom, so a seed replays.

type event struct {
	at  time.Time
	seq uint64
	do  func()
}

type events []event

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	return q[i].at.Before(q[j].at) || q[i].at.Equal(q[j].at) && q[i].seq < q[j].seq
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simNode struct {
	name    string
	st      *trackedStorage
	m       *Member // nil while down
	kv      *kv     // its state machine (a new one at each start)
	life    int     // incarnations: a stale wake-up of an earlier one does nothing
	wake    time.Time
	view    []string // the voters as its membership sees them
	found   bool
	stopped bool // its member stopped (counted)
}

// trackedStorage tells the checker when a Save replaces log entries (the one way a
// durable entry can go) so that it checks every acknowledged write again. It also fills
// up: from the failAt-th Save on (0: never), Save fails as on a full disk.
type trackedStorage struct {
	Storage
	truncated   bool
	saves       int
	failAt      int
	failSnap    bool // CreateSnapshot fails
	failCompact bool // Compact fails
}

// errDiskFull is the full disk of the tests.
var errDiskFull = fmt.Errorf("write the raft log: %w", syscall.ENOSPC)

func (s *trackedStorage) Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error {
	s.saves++
	if s.failAt > 0 && s.saves >= s.failAt {
		return errDiskFull
	}
	if len(ents) > 0 {
		if last, _ := s.LastIndex(); ents[0].GetIndex() <= last {
			s.truncated = true
		}
	}
	return s.Storage.Save(hs, ents, snap)
}

func (s *trackedStorage) CreateSnapshot(i uint64, cs *pb.ConfState, data []byte) (*pb.Snapshot, error) {
	if s.failSnap {
		return nil, errDiskFull
	}
	return s.Storage.CreateSnapshot(i, cs, data)
}

func (s *trackedStorage) Compact(i uint64) error {
	if s.failCompact {
		return errDiskFull
	}
	return s.Storage.Compact(i)
}

type ackedWrite struct {
	key, value string
	index      uint64
	term       uint64
	at         time.Time
	final      bool // read back at the end: must answer
}

type sim struct {
	t         *testing.T
	rng       *rand.Rand
	start     time.Time
	now       time.Time
	seq       uint64
	q         events
	nodes     []*simNode
	idx       map[string]int
	cfg       Config
	ackEarly  bool
	forgetful bool       // the negative control: a lost storage comes back under its old replica id
	db        *badger.DB // the members' storages (nil: MemStorage)
	stopsOK   bool       // members may stop (full disks)
	stops     int        // members that stopped
	refused   int        // frames a stopped member refused
	onAnswer  func(i int, a Answer)

	drop             float64
	minDelay, spread time.Duration
	cut              func(a, b int) bool

	writes  map[[2]uint64]ackedWrite // in flight: node, call
	reads   map[[2]uint64]ackedWrite // in flight: the write a Get must find
	changes map[[2]uint64]bool
	acked   []ackedWrite
	nextVal int

	leaders map[uint64]string        // term → leader
	confs   map[uint64]Configuration // log index → configuration applied there
	applied map[uint64]string        // log index → the write applied there
	nConfs  int
	wipes   int

	otherReplica int // frames for a replica whose storage was lost

	stopped  bool     // the writers, readers and drivers stop
	collect  bool     // the negative control: count failures rather than stop
	failures []string // (collect)

	// figures
	events, sends, frameBytes int
	sent                      map[int]int // frames sent by member
	readsOK, readsFailed      int
	readErrs                  map[string]int
	latencies                 []time.Duration
}

func newSim(t *testing.T, seed uint64, cfg Config) *sim {
	cryptotest.SetGlobalRandom(t, seed)
	start := time.Unix(1_700_000_000, 0)
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 19)), start: start, now: start, idx: map[string]int{}, cfg: cfg,
		minDelay: 100 * time.Microsecond, spread: 30 * time.Millisecond,
		writes: map[[2]uint64]ackedWrite{}, reads: map[[2]uint64]ackedWrite{}, changes: map[[2]uint64]bool{}, readErrs: map[string]int{}, sent: map[int]int{},
		leaders: map[uint64]string{}, confs: map[uint64]Configuration{}, applied: map[uint64]string{}}
	return s
}

func (s *sim) fail(format string, args ...any) {
	msg := fmt.Sprintf("at %v: ", s.now.Sub(s.start)) + fmt.Sprintf(format, args...)
	if s.collect {
		s.failures = append(s.failures, msg)
		return
	}
	for _, n := range s.nodes {
		if n.m == nil {
			s.t.Logf("%s: down", n.name)
			continue
		}
		lead, term := n.m.Leader()
		s.t.Logf("%s: leader %q term %d applied %d %+v view %v", n.name, lead, term, n.m.applied, n.m.configuration(0), n.view)
		if isLead, _ := n.m.IsLeader(); isLead {
			for id, pr := range n.m.rn.Status().Progress {
				s.t.Logf("  %s: %v", n.m.names[id], pr.String())
			}
		}
		first, _ := n.st.FirstIndex()
		last, _ := n.st.LastIndex()
		s.t.Logf("  log %d..%d", first, last)
	}
	s.t.Fatal(msg)
}

func (s *sim) at(d time.Duration, do func()) {
	s.seq++
	heap.Push(&s.q, event{at: s.now.Add(d), seq: s.seq, do: do})
}

func (s *sim) add(name string, found bool) {
	n := &simNode{name: name, st: &trackedStorage{}, found: found}
	if s.db == nil {
		n.st.Storage = NewMemStorage()
	}
	s.idx[name] = len(s.nodes)
	s.nodes = append(s.nodes, n)
	s.up(len(s.nodes) - 1)
}

// up starts node i's member from its storage (when it is down).
func (s *sim) up(i int) {
	n := s.nodes[i]
	if n.m != nil {
		return
	}
	if s.db != nil { // a restarted member reads its storage back
		st, err := OpenBadgerStorage(s.db, BadgerPrefix+n.name+"\x00")
		if err != nil {
			s.t.Fatalf("open the storage of %s: %v", n.name, err)
		}
		n.st.Storage = st
	}
	cfg := s.cfg
	cfg.Self, cfg.Found = n.name, n.found
	n.kv = newKV(func(index uint64, key string, value []byte) {
		w := key + "=" + string(value)
		if prev, ok := s.applied[index]; ok && prev != w {
			s.fail("%s applied %s at %d, another member %s", n.name, w, index, prev)
		}
		s.applied[index] = w
	})
	m, err := New(cfg, n.st, n.kv, s.now)
	if err != nil {
		s.t.Fatalf("start %s: %v", n.name, err)
	}
	m.ackEarly = s.ackEarly
	n.m, n.wake, n.stopped = m, time.Time{}, false
	n.life++
	s.drain(i)
}

// down crashes node i: its member and everything it had in memory go; its storage stays.
func (s *sim) down(i int) {
	n := s.nodes[i]
	n.m = nil
	n.life++
	for k := range s.writes {
		if k[0] == uint64(i) {
			delete(s.writes, k)
		}
	}
	for k := range s.reads {
		if k[0] == uint64(i) {
			delete(s.reads, k)
		}
	}
}

// freeDisk frees node i's disk; a member that stopped on it is restarted from its
// storage.
func (s *sim) freeDisk(i int) {
	n := s.nodes[i]
	n.st.failAt = 0
	if n.m != nil && n.m.Err() != nil {
		s.down(i)
		s.up(i)
	}
}

func (s *sim) drain(i int) {
	n := s.nodes[i]
	m := n.m
	if m == nil {
		return
	}
	for {
		rd := m.Ready()
		if rd.Empty() {
			break
		}
		if m.Err() != nil && len(rd.Sends) > 0 {
			s.fail("%s stopped (%v) but sends %d frames", n.name, m.Err(), len(rd.Sends))
		}
		for _, snd := range rd.Sends {
			s.sends++
			s.frameBytes += len(snd.Frame)
			s.sent[i]++
			to, ok := s.idx[snd.To]
			if !ok || s.rng.Float64() < s.drop || s.cut != nil && s.cut(i, to) {
				continue
			}
			from, frame, life := n.name, snd.Frame, s.nodes[to].life
			s.at(s.minDelay+time.Duration(s.rng.Int64N(int64(s.spread)+1)), func() {
				dst := s.nodes[to]
				if dst.m == nil || dst.life != life {
					return // it crashed meanwhile: the frame is lost with the connection
				}
				if err := dst.m.Receive(from, frame); errors.Is(err, ErrOtherReplica) {
					s.otherReplica++ // meant for the replica this member was before its storage was lost
				} else if err != nil {
					switch {
					case s.forgetful && errors.Is(err, ErrStopped):
						// The negative control: raft finds a leader's commit index past the
						// end of a follower's log (one that forgot it) and the member stops.
						s.fail("%s: stopped: %v", dst.name, err)
					case s.stopsOK && errors.Is(err, ErrStopped):
						s.refused++
					default:
						s.t.Fatalf("%s: %v", dst.name, err)
					}
				}
				s.drain(to)
			})
		}
		for _, c := range rd.Configs {
			s.config(n.name, c)
		}
		for _, a := range rd.Answers {
			s.answered(i, a)
		}
	}
	if err := m.Err(); err != nil && !n.stopped {
		n.stopped = true
		s.stops++
		if !s.stopsOK || !errors.Is(err, ErrStopped) || !errors.Is(err, syscall.ENOSPC) {
			s.fail("%s stopped: %v", n.name, err)
		}
	}
	if next := m.NextDeadline(); n.wake.IsZero() || next.Before(n.wake) {
		n.wake = next
		life := n.life
		s.at(max(next.Sub(s.now), 0), func() {
			if n.life != life || !n.wake.Equal(next) {
				return
			}
			n.wake = time.Time{}
			n.m.Tick(s.now)
			s.drain(i)
		})
	}
}

func (s *sim) answered(i int, a Answer) {
	if s.onAnswer != nil {
		s.onAnswer(i, a)
	}
	k := [2]uint64{uint64(i), a.Call}
	if a.Err != nil && errors.Is(a.Err, ErrStopped) && s.nodes[i].m.Err() == nil {
		s.fail("%s answered call %d with %v, but it runs", s.nodes[i].name, a.Call, a.Err)
	}
	if w, ok := s.writes[k]; ok {
		delete(s.writes, k)
		if a.Err != nil {
			return
		}
		w.index, w.term = a.Index, a.Term
		s.acked = append(s.acked, w)
		s.latencies = append(s.latencies, s.now.Sub(w.at))
		s.checkHeld(s.acked[len(s.acked)-1:])
		return
	}
	if w, ok := s.reads[k]; ok {
		delete(s.reads, k)
		if a.Err != nil {
			s.readsFailed++
			s.readErrs[a.Err.Error()]++
			if w.final {
				s.fail("final read of %q at %s: %v", w.key, s.nodes[i].name, a.Err)
			}
			return
		}
		s.readsOK++
		if v, found := s.nodes[i].kv.value(w.key); !found || string(v) != w.value {
			s.fail("%s read %q at index %d: found %v %q, but %q was acknowledged at %v (index %d)",
				s.nodes[i].name, w.key, a.Index, found, v, w.value, w.at.Sub(s.start), w.index)
		}
		return
	}
	delete(s.changes, k)
}

// config checks that configuration c, applied by member by, is the one every member
// applies at its index, and follows the one before and precedes the one after.
func (s *sim) config(by string, c Configuration) {
	if prev, ok := s.confs[c.Index]; ok {
		if !slices.Equal(prev.Voters, c.Voters) || !slices.Equal(prev.Outgoing, c.Outgoing) {
			s.fail("%s applied configuration %+v at %d, another member %+v", by, c, c.Index, prev)
		}
		return
	}
	s.confs[c.Index] = c
	s.nConfs++
	idx := slices.Sorted(func(yield func(uint64) bool) {
		for i := range s.confs {
			if !yield(i) {
				return
			}
		}
	})
	at := slices.Index(idx, c.Index)
	if at > 0 {
		s.follows(s.confs[idx[at-1]], c)
	}
	if at < len(idx)-1 {
		s.follows(c, s.confs[idx[at+1]])
	}
	s.checkHeld(s.acked)
}

// follows checks that b may follow a: a joint configuration leaves to its incoming set;
// a simple one enters a joint one from itself (or, founding, grows by one voter); or b is
// a (snapshot's) restatement of a.
func (s *sim) follows(a, b Configuration) {
	same := slices.Equal(a.Voters, b.Voters) && slices.Equal(a.Outgoing, b.Outgoing)
	var ok bool
	switch {
	case same:
		ok = true
	case a.Joint():
		ok = !b.Joint() && slices.Equal(b.Voters, a.Voters)
	case b.Joint():
		ok = slices.Equal(b.Outgoing, a.Voters)
	default:
		ok = len(a.Voters) == 0 && len(b.Voters) == 1
	}
	if !ok {
		s.fail("configuration %+v does not follow %+v", b, a)
	}
}

// quorumSet is the set whose majority holds every committed entry: the newest applied
// configuration's voters, or while it is joint, the set it leaves (a joint configuration
// was committed by the one before it, and raft leaves it only by a joint commit).
func (s *sim) quorumSet() []Voter {
	var newest uint64
	for i := range s.confs {
		newest = max(newest, i)
	}
	c := s.confs[newest]
	if c.Joint() {
		return c.Outgoing
	}
	return c.Voters
}

// checkHeld checks that each acknowledged write ws is in the durable log (or snapshot) of
// a majority of quorumSet — of its replicas that still have their storage: every majority
// of the set that can still vote must hold it. (A replica whose storage was lost never
// votes again under its id: of 5 with one lost, the write must be on 2 of the 4 left, as
// any 3 of those 4 include one of them.)
func (s *sim) checkHeld(ws []ackedWrite) {
	set := s.quorumSet()
	for _, w := range ws {
		if w.index == 0 {
			if !s.ackEarly { // early acknowledgements (the negative control) are checked by reads alone
				s.fail("write of %q acknowledged before it had a log index", w.key)
			}
			continue
		}
		held, live := 0, 0
		for _, v := range set {
			i, ok := s.idx[v.Name]
			if !ok {
				continue
			}
			st := s.nodes[i].st
			if id, _ := st.ID(); id != v.ID {
				continue // that replica's storage was lost: it holds nothing, and never votes
			}
			live++
			if first, _ := st.FirstIndex(); w.index < first {
				held++ // in the snapshot, taken of applied (committed) entries
				continue
			}
			if t, err := st.Term(w.index); err == nil && t == w.term {
				held++
			}
		}
		if held <= live-(len(set)/2+1) {
			s.fail("acknowledged write of %q (index %d, term %d) is in the log of %d of %v (%d with their storage)", w.key, w.index, w.term, held, set, live)
		}
	}
}

// checkEvent runs after every event: one leader per term, and every acknowledged write
// held again when a log lost entries.
func (s *sim) checkEvent() {
	again := false
	for _, n := range s.nodes {
		if n.st.truncated {
			n.st.truncated, again = false, true
		}
		if n.m == nil {
			continue
		}
		if lead, term := n.m.IsLeader(); lead {
			if prev, ok := s.leaders[term]; ok && prev != n.name {
				s.fail("two leaders in term %d: %s and %s", term, prev, n.name)
			}
			s.leaders[term] = n.name
		}
	}
	if again {
		s.checkHeld(s.acked)
	}
}

func (s *sim) run(d time.Duration) {
	end := s.now.Add(d)
	for s.q.Len() > 0 && !s.q[0].at.After(end) {
		e := heap.Pop(&s.q).(event)
		s.now = e.at
		e.do()
		s.events++
		s.checkEvent()
	}
	s.now = end
}

// write has node i write a new key.
func (s *sim) write(i int) {
	n := s.nodes[i]
	if n.m == nil {
		return
	}
	s.nextVal++
	w := ackedWrite{key: fmt.Sprintf("k/%s/%d", n.name, s.nextVal), value: fmt.Sprintf("v%d", s.nextVal), at: s.now}
	s.writes[[2]uint64{uint64(i), n.m.Propose(s.now, encodeKV(w.key, []byte(w.value)))}] = w
	s.drain(i)
}

// read has node i read an acknowledged write back.
func (s *sim) read(i int, w ackedWrite) {
	n := s.nodes[i]
	if n.m == nil {
		return
	}
	s.reads[[2]uint64{uint64(i), n.m.ReadIndex(s.now)}] = w
	s.drain(i)
}

// drive has node i move the group to its view of the voters (the membership's driver).
func (s *sim) drive(i int) {
	n := s.nodes[i]
	if n.m == nil || n.m.reached(s.voters(n.view)) {
		return
	}
	s.changes[[2]uint64{uint64(i), n.m.ChangeVoters(s.now, s.voters(n.view))}] = true
	s.drain(i)
}

// every runs do at random intervals in [lo, hi) until the simulation stops.
func (s *sim) every(lo, hi time.Duration, do func()) {
	var again func()
	again = func() {
		if s.stopped {
			return
		}
		do()
		s.at(lo+time.Duration(s.rng.Int64N(int64(hi-lo))), again)
	}
	s.at(time.Duration(s.rng.Int64N(int64(hi-lo))), again)
}

// voters names the replicas of members view: each one's current storage (the membership
// learns a new replica's id when it announces itself).
func (s *sim) voters(view []string) []Voter {
	out := make([]Voter, len(view))
	for i, name := range view {
		id, _ := s.nodes[s.idx[name]].st.ID()
		out[i] = Voter{Name: name, ID: id}
	}
	return out
}

// wipe loses node i's storage (a replaced disk): it comes back as a new replica.
func (s *sim) wipe(i int) {
	s.down(i)
	n := s.nodes[i]
	id, _ := n.st.ID()
	if err := n.st.Reset(); err != nil {
		s.t.Fatalf("reset the storage of %s: %v", n.name, err)
	}
	if s.forgetful {
		n.st.Storage.(*MemStorage).id = id // the negative control: the same id, an empty storage
	}
	n.st = &trackedStorage{Storage: n.st.Storage}
	n.found = false
	s.wipes++
}

// mayWipe reports whether node i may lose its storage and the group still hold: every set
// of the newest configuration keeps a majority of replicas with their storage. (Raft
// tolerates the loss of a minority; a group that lost the storage of a majority is gone.)
func (s *sim) mayWipe(i int) bool {
	var newest uint64
	for idx := range s.confs {
		newest = max(newest, idx)
	}
	c := s.confs[newest]
	for _, set := range [][]Voter{c.Voters, c.Outgoing} {
		live := 0
		for _, v := range set {
			j := s.idx[v.Name]
			if id, _ := s.nodes[j].st.ID(); id == v.ID && j != i {
				live++
			}
		}
		if len(set) > 0 && live <= len(set)/2 {
			return false
		}
	}
	return true
}

// voterNames returns the names of set.
func voterNames(set []Voter) []string {
	out := make([]string, len(set))
	for i, v := range set {
		out[i] = v.Name
	}
	return out
}

func names(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("m%d", i))
	}
	return out
}
