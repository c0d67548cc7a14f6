package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/remember/metaraft"
	"github.com/shardmesh/shardmesh/shard"
)

// memberStore is a member's replica of the replicated store: the real store machine
// (remember.Machine) of its running process, on a disk (remember.MemDisk) that outlives its
// processes. Frames go over the simulated network; disk operations take a little virtual
// time each, applies one at a time in order (the disk contract of remember/disk.go); a
// crash lands the apply in progress or not (drawn), and loses every one queued behind it.
//
// A simulation without entity types runs no store: its members only ever read the
// operator's directives, and are answered at once that there are none.
type memberStore struct {
	s    *Sim
	n    *Node
	disk *remember.MemDisk
	meta *metaraft.MemStorage // its replica of the metadata group, when a voter: outlives processes too

	m        *remember.Machine // of the running process; nil while none runs
	inc      uint64
	calls    map[remember.CallID]uint64 // machine call → the core's request id
	own      map[remember.CallID]func(remember.Answer)
	place    *remember.Placement // the last given to the machine
	admitted []membership.NodeID // the last given to the machine
	applies  []remember.DiskOp   // queued; the first one is in progress when applying
	applying bool
	wake     time.Time // when the machine's next tick is scheduled (zero: none)
}

// errDiskFault is a disk operation that failed (Sim.DiskFailRate): nothing of it done.
var errDiskFault = errors.New("simulated disk fault")

func newMemberStore(s *Sim, n *Node) *memberStore {
	return &memberStore{s: s, n: n, disk: remember.NewMemDisk(), meta: metaraft.NewMemStorage()}
}

// real reports whether members run a store (the simulation has entity types).
func (st *memberStore) real() bool { return len(st.s.opts.Types) > 0 }

// open starts the store machine of the node's new process on what its disk holds.
func (st *memberStore) open() {
	st.inc = st.n.Incarnation
	st.calls, st.own = map[remember.CallID]uint64{}, map[remember.CallID]func(remember.Answer){}
	st.place, st.admitted, st.applies, st.applying, st.wake = nil, nil, nil, false, time.Time{}
	if !st.real() {
		return
	}
	cfg := st.s.opts.Store.MachineConfig(st.n.ID)
	cfg.AntiEntropyInterval = st.s.opts.AntiEntropyInterval
	cfg.Seed = st.s.auxRng.Uint64()
	cfg.Returning = st.n.Incarnation > 1 // as node's: the member ran before with this disk
	cfg.MetaStorage = st.meta
	cfg.OnMetaGroup = func(c metaraft.Configuration) {
		st.s.logf("%s: metadata group at %d: voters %v outgoing %v", st.n.ID, c.Index, c.Voters, c.Outgoing)
	}
	m, err := remember.NewMachine(cfg, st.disk.State(cfg.Layout), st.s.now)
	if err != nil {
		panic(err)
	}
	st.m = m
}

// crash ends the process's machine: the apply in progress lands or not, the rest is lost.
func (st *memberStore) crash() {
	if st.m != nil && st.applying && st.s.auxRng.IntN(2) == 0 {
		st.disk.Do(st.applies[0])
	}
	st.m, st.applies, st.applying, st.calls, st.own = nil, nil, false, nil, nil
}

// request carries out a store request of the core.
func (st *memberStore) request(id uint64, req node.StoreRequest) {
	n, inc := st.n, st.n.Incarnation
	if st.m == nil {
		// No store: nothing stored, anything written is taken.
		st.s.schedule(0, func() { st.s.input(n, inc, node.StoreDone{ID: id}) })
		return
	}
	var call remember.CallID
	switch {
	case req.Writes != nil:
		if err := remember.CheckWrites(req.Writes); err != nil {
			st.s.schedule(0, func() { st.s.input(n, inc, node.StoreDone{ID: id, Result: node.StoreResult{Err: err}}) })
			return
		}
		call = st.m.Write(st.s.now, req.Writes)
	case req.IsScan:
		call = st.m.Scan(st.s.now, req.Scan)
	default:
		call = st.m.Get(st.s.now, req.Get, req.Fence)
	}
	st.calls[call] = id
}

// call makes a call of the simulation's own (the entities' state) and hands its answer to
// done, on a running process.
func (st *memberStore) call(start func(m *remember.Machine) remember.CallID, done func(remember.Answer)) {
	if st.m == nil {
		done(remember.Answer{Err: remember.ErrClosed})
		return
	}
	id := start(st.m)
	st.own[id] = done
	st.sync()
}

// host tells the machine its member hosts (or no longer hosts) a shard.
func (st *memberStore) host(u remember.Unit, epoch uint64, hosted bool) {
	if st.m == nil {
		return
	}
	if hosted {
		st.m.Host(st.s.now, u, epoch)
	} else {
		st.m.Unhost(st.s.now, u)
	}
	st.sync()
}

// care has the machine look after the replica sets of units (Machine.Care).
func (st *memberStore) care(units []remember.Unit) {
	if st.m == nil {
		return
	}
	st.m.Care(st.s.now, units)
	st.sync()
}

// sync gives the machine the placement the core sees and carries out what it asks for.
func (st *memberStore) sync() {
	if st.m == nil || !st.n.Alive {
		return
	}
	if v := st.n.Core.View(); v != nil {
		if p := v.Placement(); p != st.place {
			st.place = p
			st.m.SetPlacement(st.s.now, p)
		}
		if a := v.Admitted(); !sameSlice(a, st.admitted) {
			st.admitted = a
			st.m.SetAdmitted(st.s.now, a)
		}
	}
	s, n, inc := st.s, st.n, st.inc
	for {
		rd := st.m.Ready()
		if rd.Empty() {
			break
		}
		for _, snd := range rd.Sends {
			to := s.byID[snd.To]
			if to == nil {
				continue
			}
			frame := snd.Frame
			if s.meter != nil {
				s.meter.replica(n, frame)
			}
			s.send(n, to, s.auxRng, func(to *Node) { to.store.receive(n.ID, frame) }, nil)
		}
		for _, op := range rd.Disk {
			st.diskOp(op)
		}
		for _, from := range rd.Refused {
			s.refused(n, from, "replica")
		}
		if len(rd.Landed) > 0 {
			keys := rd.Landed
			s.schedule(0, func() { s.input(n, inc, node.StoreLanded{Keys: keys}) })
		}
		for _, a := range rd.Answers {
			if done := st.own[a.Call]; done != nil {
				delete(st.own, a.Call)
				done(a)
				continue
			}
			id, ok := st.calls[a.Call]
			if !ok {
				continue
			}
			delete(st.calls, a.Call)
			res := node.StoreResult{Record: a.Record, Found: a.Found, Records: a.Records, Err: a.Err}
			s.schedule(0, func() { s.input(n, inc, node.StoreDone{ID: id, Result: res}) })
		}
	}
	if next := st.m.NextDeadline(); !next.IsZero() && (st.wake.IsZero() || next.Before(st.wake)) {
		st.wake = next
		s.schedule(max(next.Sub(s.now), 0), func() {
			st.when(inc, func() {
				if st.wake.Equal(next) {
					st.wake = time.Time{}
				}
				st.m.Tick(s.now)
				st.sync()
			})
		})
	}
}

func sameSlice(a, b []membership.NodeID) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// when runs fn on the node's process inc while it runs its store; a paused process runs it
// when it resumes, a dead one never.
func (st *memberStore) when(inc uint64, fn func()) {
	n := st.n
	switch {
	case !n.Alive || n.Incarnation != inc || st.m == nil:
	case n.Paused:
		n.held = append(n.held, func() { st.when(inc, fn) })
	default:
		fn()
	}
}

// receive hands the machine a replica frame from member from.
func (st *memberStore) receive(from membership.NodeID, frame []byte) {
	st.when(st.n.Incarnation, func() {
		if err := st.m.Receive(st.s.now, from, frame); err != nil {
			st.s.fail("%s: a replica frame from %s does not decode: %v", st.n.ID, from, err)
			return
		}
		st.sync()
	})
}

// Disk timing: an apply (a commit with its fsync) and a read take a little virtual time,
// now and then much longer (a slow fsync).
func (st *memberStore) diskDelay(apply bool) time.Duration {
	r := st.s.auxRng
	d := time.Duration(100+r.IntN(400)) * time.Microsecond
	if apply {
		d += time.Duration(500+r.IntN(1500)) * time.Microsecond
		if r.IntN(100) == 0 {
			d += time.Duration(10+r.IntN(40)) * time.Millisecond
		}
	}
	return d
}

// diskOp starts a disk operation: applies one at a time, in order; reads at once.
func (st *memberStore) diskOp(op remember.DiskOp) {
	if op.Kind != remember.DiskApply {
		inc := st.inc
		st.s.schedule(st.diskDelay(false), func() {
			st.when(inc, func() {
				st.m.DiskDone(st.s.now, st.do(op))
				st.sync()
			})
		})
		return
	}
	st.applies = append(st.applies, op)
	st.nextApply()
}

// nextApply starts the next queued apply when none is in progress.
func (st *memberStore) nextApply() {
	if st.applying || len(st.applies) == 0 {
		return
	}
	st.applying = true
	inc := st.inc
	st.s.schedule(st.diskDelay(true), func() {
		st.when(inc, func() {
			op := st.applies[0]
			st.applies = st.applies[1:]
			st.applying = false
			st.m.DiskDone(st.s.now, st.do(op))
			st.nextApply()
			st.sync()
		})
	})
}

// do carries a disk operation out, or fails it (Sim.DiskFailRate).
func (st *memberStore) do(op remember.DiskOp) remember.DiskResult {
	if st.s.DiskFailRate > 0 && st.s.auxRng.Float64() < st.s.DiskFailRate {
		return op.Failed(errDiskFault)
	}
	return st.disk.Do(op)
}

// storedRecords returns the live records under prefix as the stores hold them together:
// each key's newest record over the disks of the members whose process runs (what a read
// of all of them merges; with all, over every member's disk, the dead ones' too), sorted
// by key. Tombstones are left out.
func (s *Sim) storedRecords(prefix string, all bool) []remember.Record {
	var disks []*remember.MemDisk
	var state []uint64 // which disks, and how often each changed: the view's key
	for _, n := range s.nodes[1:] {
		if all || n.Alive {
			disks = append(disks, n.store.disk)
			state = append(state, uint64(n.Index), n.store.disk.Changes())
		}
	}
	view := fmt.Sprint(prefix, all)
	if c := s.stored[view]; c != nil && slices.Equal(c.state, state) {
		return c.records
	}
	newest := map[string]remember.Record{}
	for _, d := range disks {
		for _, r := range d.Records() {
			if !strings.HasPrefix(r.Key, prefix) {
				continue
			}
			if cur, ok := newest[r.Key]; !ok || r.Version.Compare(cur.Version) > 0 {
				newest[r.Key] = r
			}
		}
	}
	var out []remember.Record
	for _, k := range slices.Sorted(maps.Keys(newest)) {
		if r := newest[k]; !r.Deleted {
			out = append(out, r)
		}
	}
	s.stored[view] = &storedView{state: state, records: out}
	return out
}

// storedView is what storedRecords found under a prefix, while the disks do not change.
type storedView struct {
	state   []uint64
	records []remember.Record
}

// remembered returns the remembered entities of type typ, as the running members' stores
// hold them, sorted.
func (s *Sim) remembered(typ string) []entityKey {
	var out []entityKey
	prefix := datadir.Prefix(datadir.FamilyEntity, typ)
	for _, r := range s.storedRecords(prefix, false) {
		_, id, ok := strings.Cut(strings.TrimPrefix(r.Key, prefix), datadir.Sep)
		if ok {
			out = append(out, entityKey{typ, shard.EntityID(id)})
		}
	}
	slices.SortFunc(out, func(a, b entityKey) int { return strings.Compare(string(a.entity), string(b.entity)) })
	return out
}

// checkRemembered: every remembered entity runs on exactly one running member (checked once
// the cluster has settled). Remembered means acknowledged: a shard starts an entity only
// once its remembering was acknowledged, so an entity that never started is one whose write
// failed — which may still be stored on some replica and spread from there later (the
// entity then starts with its shard's next start).
func (s *Sim) checkRemembered(typ string) error {
	for _, key := range s.remembered(typ) {
		if !s.started[key] {
			continue
		}
		var on []string
		for _, n := range s.nodes[1:] {
			if n.Running() && n.entities != nil && n.entities.live[key] != nil {
				on = append(on, string(n.ID))
			}
		}
		if len(on) != 1 {
			return fmt.Errorf("remembered entity %s runs on %d members %v", key, len(on), on)
		}
	}
	return nil
}

// MetaReport is each running member's view of the metadata group (for failures).
func (s *Sim) MetaReport() string {
	var b strings.Builder
	for _, n := range s.Nodes() {
		if n.store == nil || n.store.m == nil {
			fmt.Fprintf(&b, "%s: no store running\n", n.ID)
			continue
		}
		st := n.store.m.MetaStatus()
		id, _ := n.store.meta.ID()
		fmt.Fprintf(&b, "%s: replica %v (id %d) voter %v leader %q term %d applied %d voters %v err %v\n",
			n.ID, st.Replica, id, st.Voter, st.Leader, st.Term, st.Applied, st.Voters, st.Err)
	}
	return b.String()
}
