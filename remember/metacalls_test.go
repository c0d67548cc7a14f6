package remember

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/remember/metaraft"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// TestOwnCallsAnsweredAtOnce: the machine's own calls — a unit's configuration read before
// a call on the unit, the refill's scan of the configurations — on the only voter of the
// metadata group, whose reads the group answers at once (inside the call): each gets its
// answer. Runtime soak seed 37: after a full-cluster restart the group's only voter never
// learned its shards' replica sets, and their increments waited for ever.
func TestOwnCallsAnsweredAtOnce(t *testing.T) {
	disk := NewMemDisk()
	m, err := NewMachine(MachineConfig{Self: "a", Layout: testLayout{}, Timeout: time.Second, AntiEntropyInterval: -1,
		MetaStorage: metaraft.NewMemStorage()}, disk.State(testLayout{}), t0)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	answered := map[CallID]Answer{}
	// run hands the machine its disk operations and ticks it until cond holds (10 s of
	// virtual time at most). It has no peers: its frames go nowhere.
	run := func(what string, cond func() bool) {
		t.Helper()
		for end := now.Add(10 * time.Second); !cond(); {
			rd := m.Ready()
			for _, a := range rd.Answers {
				answered[a.Call] = a
			}
			for _, op := range rd.Disk {
				m.DiskDone(now, disk.Do(op))
			}
			if len(rd.Disk) > 0 || len(rd.Answers) > 0 {
				continue
			}
			next := m.NextDeadline()
			if next.IsZero() || next.After(end) {
				t.Fatalf("%s: not within 10 s (%v)", what, now.Sub(t0))
			}
			now = next
			m.Tick(now)
		}
	}
	m.SetPlacement(now, NewPlacement([]PlacedMember{{ID: "a", Age: 1}}, 3, 0, nil))
	run("the group of one elects its voter", func() bool { return m.MetaStatus().Leader == "a" })

	// A read of a unit this member does not host reads the unit's configuration first.
	get := m.Get(now, "u/1/k", 0)
	run("the read of a unit answered", func() bool { _, ok := answered[get]; return ok })
	if a := answered[get]; a.Err != nil || a.Found {
		t.Fatalf("the read of a unit never written: %+v", a)
	}

	// A refill reads which units name this member: none, so it ends.
	m.StartRefill(now, "test")
	run("the refill ended", func() bool { return !m.Refill().Active })
}

// TestForwardedCallAnsweredByAFormerVoter: a member that is no voter forwards its metadata
// calls; when the voter that answers one is no voter any more by then (the placement
// changed meanwhile), the next call goes to a voter of the placement (reminder soak seed 72
// panicked on an index of -1).
func TestForwardedCallAnsweredByAFormerVoter(t *testing.T) {
	m, err := NewMachine(MachineConfig{Self: "c", Layout: testLayout{}, Timeout: time.Second, AntiEntropyInterval: -1,
		MetaStorage: metaraft.NewMemStorage()}, DiskState{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	placed := func(voters ...NodeID) *Placement {
		ms := []PlacedMember{{ID: "c", Age: 9}}
		for i, v := range voters {
			ms = append(ms, PlacedMember{ID: v, Age: uint64(i + 1)})
		}
		return NewPlacement(ms, 3, len(voters), nil)
	}
	forwarded := func() (NodeID, uint64) {
		t.Helper()
		for _, s := range m.Ready().Sends {
			env, err := wire.DecodeReplica(s.Frame)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := env.Msg.(*pb.ReplicaEnvelope_MetaCall); ok {
				return s.To, env.RequestId
			}
		}
		t.Fatal("no metadata call forwarded")
		return "", 0
	}
	m.SetPlacement(t0, placed("a", "b"))
	get := m.Get(t0, "meta-key", 0)
	to, req := forwarded()
	m.SetPlacement(t0, placed("d", "e")) // to is no voter any more
	m.ReceiveEnvelope(t0, to, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_MetaAnswer{
		MetaAnswer: &pb.MetaAnswer{Records: []*pb.ReplicaRecord{{Key: []byte("meta-key")}}}}})
	if a := answers(m)[get]; a.Err != nil {
		t.Fatalf("the forwarded read: %v", a.Err)
	}
	m.Get(t0, "meta-key", 0)
	if to, _ := forwarded(); to != "d" && to != "e" {
		t.Fatalf("the next call went to %s, not a voter of the placement", to)
	}
}

// TestRemovedReplicaNeverRejoins: a member restarted on the replica the group removed (it
// applied its removal and stopped before it dropped it) joins as a new replica; it never
// announces the removed one, which the leader would add back (runtime soak seed 198: the
// group went joint with a voter that no longer existed and never elected a leader again).
func TestRemovedReplicaNeverRejoins(t *testing.T) {
	n := &groupNet{t: t, now: t0, nodes: map[NodeID]*groupNode{}}
	a := n.open("a", placed("a", "b"))
	n.open("b", placed("a", "b"))
	bID := func() uint64 { id, _ := n.nodes["b"].meta.ID(); return id }
	// group: a leads the group of the replicas ids, no change under way.
	group := func(ids ...uint64) func() bool {
		return func() bool {
			c := a.mg.member.Configuration()
			var voters []uint64
			for _, v := range c.Voters {
				voters = append(voters, v.ID)
			}
			return a.MetaStatus().Leader == "a" && !c.Joint() && slices.Equal(slices.Sorted(slices.Values(voters)), slices.Sorted(slices.Values(ids)))
		}
	}
	aID, _ := n.nodes["a"].meta.ID()
	n.run("a founds the group and adds b", group(aID, bID()), "a", "b")

	// The group removes b. b stops after it applied its removal, before it dropped the
	// replica: its disk holds the log up to the removal, committed, and the removed id.
	removed, removedID := *n.nodes["b"].meta, bID() // a copy: b's Reset leaves it as it is
	a.SetPlacement(n.now, placed("a"))
	n.run("the group removes b", group(aID), "a")
	first, _ := removed.LastIndex()
	last, _ := n.nodes["a"].meta.LastIndex()
	ents, err := n.nodes["a"].meta.Entries(first+1, last+1, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	hs, _, _ := removed.InitialState()
	hs.Commit = &last
	if err := removed.Save(hs, ents, nil); err != nil {
		t.Fatal(err)
	}
	n.nodes["b"].meta = &removed

	// Restarted, b is named a voter again, and ticks before it hears from the leader (in
	// the seed, the cluster formed again 5 s after it started): the group adds it as a new
	// replica, which follows the leader.
	b := n.open("b", placed("a", "b"))
	a.SetPlacement(n.now, placed("a", "b"))
	b.Tick(n.now)
	n.run("the group adds b's new replica", func() bool {
		return bID() != removedID && group(aID, bID())() && b.MetaStatus().Voter && b.MetaStatus().Leader == "a"
	}, "a", "b")
}

// TestStoppedReplicaWaitsToRestart: a replica of the group that stopped (its disk was full)
// starts again from its storage after metaRestartEvery, and meanwhile its machine asks to
// be ticked at the replica's pace, not again at once (it asked for a tick at the same
// instant for ever: a Store would spin until the restart, a simulation's time stand still).
func TestStoppedReplicaWaitsToRestart(t *testing.T) {
	alone := NewPlacement([]PlacedMember{{ID: "a", Age: 1}}, 3, 0, nil)
	n := &groupNet{t: t, now: t0, nodes: map[NodeID]*groupNode{}}
	a := n.open("a", alone)
	leads := func() bool { return a.MetaStatus().Leader == "a" }
	n.run("a founds the group", leads, "a")

	// Started again on a disk that may fill up.
	full := &fullStorage{MemStorage: n.nodes["a"].meta}
	n.nodes["a"].st = full
	a = n.open("a", alone)
	n.run("a leads again", leads, "a")

	full.full = true
	a.Write(n.now, []Write{{Key: "meta-key", Value: []byte("v")}})
	n.run("the replica stops on the full disk", func() bool { return a.mg.member.Err() != nil }, "a")
	stopped := n.now
	full.full = false
	n.run("the replica starts again and leads", leads, "a")
	if took := n.now.Sub(stopped); took < metaRestartEvery {
		t.Fatalf("started again after %v, not %v", took, metaRestartEvery)
	}
}

// groupOfThree starts a, b and c, all voters of the metadata placement, until a leads a
// group of the three.
func groupOfThree(t *testing.T) (n *groupNet, a, b, c *Machine) {
	three := placed("a", "b", "c")
	n = &groupNet{t: t, now: t0, nodes: map[NodeID]*groupNode{}}
	a, b, c = n.open("a", three), n.open("b", three), n.open("c", three)
	n.run("a leads a group of three", func() bool {
		return a.MetaStatus().Leader == "a" && len(a.MetaStatus().Voters) == 3 && b.MetaStatus().Voter && c.MetaStatus().Voter
	}, "a", "b", "c")
	return n, a, b, c
}

// TestForwardedCallNotRelayed: a voter that knows no leader makes a call forwarded to it
// itself, or answers it with an error; it never forwards it on to another voter. Runtime
// soak seed 771: while the group elected, voters relayed each other's calls, each relay a
// new call that relayed again: 14,000 calls in flight on a member after 2 s.
func TestForwardedCallNotRelayed(t *testing.T) {
	n, _, b, _ := groupOfThree(t)

	// b is cut off from the others: after an election timeout it knows no leader.
	delete(n.nodes, "a")
	delete(n.nodes, "c")
	n.run("b knows no leader", func() bool { return b.MetaStatus().Leader == "" }, "b")

	// A member that is no voter forwards a write to b.
	var answer *pb.MetaAnswer
	n.sent = func(from, to NodeID, env *pb.ReplicaEnvelope) {
		switch msg := env.Msg.(type) {
		case *pb.ReplicaEnvelope_MetaCall:
			t.Fatalf("%s forwarded the call on to %s", from, to)
		case *pb.ReplicaEnvelope_MetaAnswer:
			if to == "x" && env.RequestId == 7 {
				answer = msg.MetaAnswer
			}
		}
	}
	b.ReceiveEnvelope(n.now, "x", &pb.ReplicaEnvelope{RequestId: 7, Msg: &pb.ReplicaEnvelope_MetaCall{MetaCall: &pb.MetaCall{
		Propose: &pb.MetaProposal{Writes: []*pb.ReplicaRecord{toPB(&entry{rec: Record{Key: "meta-key", Value: []byte("v"),
			Version: Version{Epoch: 1, Counter: 1, Writer: "x"}}}, false)}}}}})
	n.run("b answers the call", func() bool { return answer != nil }, "b")
	if answer.Error == "" {
		t.Fatalf("b, which knows no leader, answered the write without an error: %+v", answer)
	}
}

// TestRemovedReplicaNotAddedFromItsAnnouncement: the leader adds a replica by the id it
// announced; once the group removed it, that old announcement never brings it back
// (runtime soak seed 741: a member that left and came back was added under the id of its
// first replica, which it had reset; the group went joint with a voter that no longer
// existed).
func TestRemovedReplicaNotAddedFromItsAnnouncement(t *testing.T) {
	n := &groupNet{t: t, now: t0, nodes: map[NodeID]*groupNode{}}
	a := n.open("a", placed("a", "b"))
	n.open("b", placed("a", "b"))
	aID, _ := n.nodes["a"].meta.ID()
	bID, _ := n.nodes["b"].meta.ID()
	voters := func(ids ...uint64) func() bool {
		return func() bool {
			c := a.mg.member.Configuration()
			var got []uint64
			for _, v := range c.Voters {
				got = append(got, v.ID)
			}
			return a.MetaStatus().Leader == "a" && !c.Joint() && slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(ids)))
		}
	}
	n.run("b is added", voters(aID, bID), "a", "b")
	a.SetPlacement(n.now, placed("a"))
	n.run("b is removed", voters(aID), "a", "b")

	// b is away (its next replica has not announced itself) when the placement names it a
	// voter again: the group waits for its announcement, and stays as it is meanwhile.
	delete(n.nodes, "b")
	a.SetPlacement(n.now, placed("a", "b"))
	until := n.now.Add(5 * time.Second)
	n.run("5 s pass", func() bool {
		if c := a.mg.member.Configuration(); c.Joint() || len(c.Voters) != 1 {
			t.Fatalf("the group changed to %+v without b's announcement", c)
		}
		return !n.now.Before(until)
	}, "a")
	if !voters(aID)() {
		t.Fatalf("a does not lead the group of itself: %+v", a.MetaStatus())
	}
}
