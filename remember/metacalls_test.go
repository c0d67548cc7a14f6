package remember

import (
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
