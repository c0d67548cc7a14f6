package remember

import (
	"slices"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/trust"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// forgedWrite is a replica write request of key k, as member writer would send it.
func forgedWrite(req uint64, k, writer string) *pb.ReplicaEnvelope {
	return &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{Records: []*pb.ReplicaRecord{
		{Key: []byte(k), Value: []byte("forged"), Epoch: 1, Counter: 1 << 40, Writer: writer}}}}}
}

// TestGatedMachine: a gated machine takes frames only from the members it was told are
// admitted. A stranger's write changes nothing and is refused once it has waited
// trust.AdmitGrace; a member admitted a moment after its frame arrived is served in full.
func TestGatedMachine(t *testing.T) {
	m, err := NewMachine(MachineConfig{Self: "a", Gated: true, AntiEntropyInterval: -1}, DiskState{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	m.SetPlacement(t0, FixedPlacement("a", "b", "c")())
	m.SetAdmitted(t0, []NodeID{"a", "c"})

	m.ReceiveEnvelope(t0, "x", forgedWrite(1, "k", "x"))
	m.ReceiveEnvelope(t0, "b", forgedWrite(2, "j", "b")) // b's admission is on its way
	if rd := m.Ready(); !rd.Empty() {
		t.Fatalf("frames of peers not admitted were taken at once: %+v", rd)
	}
	if d := m.NextDeadline(); !d.Equal(t0.Add(trust.AdmitGrace)) {
		t.Fatalf("the machine wants a tick at %v, not when the waiting frames expire", d)
	}
	m.SetAdmitted(t0.Add(time.Second), []NodeID{"a", "b", "c"})
	if rd := m.Ready(); len(rd.Disk) != 1 || len(rd.Refused) != 0 {
		t.Fatalf("b's write once b is admitted: %+v", rd)
	}
	m.Tick(t0.Add(trust.AdmitGrace))
	if rd := m.Ready(); len(rd.Disk) != 0 || !slices.Equal(rd.Refused, []NodeID{"x"}) || m.Stats().NotAdmitted != 1 {
		t.Fatalf("the stranger's write after the grace: %+v, %d refused", rd, m.Stats().NotAdmitted)
	}

	// Once the member is out (Down, Removed), its frames are refused too; this member's own
	// are always taken.
	m.SetAdmitted(t0.Add(3*time.Second), []NodeID{"a", "c"})
	m.ReceiveEnvelope(t0.Add(3*time.Second), "b", forgedWrite(3, "j", "b"))
	m.ReceiveEnvelope(t0.Add(3*time.Second), "a", forgedWrite(4, "i", "a"))
	m.Tick(t0.Add(3*time.Second + trust.AdmitGrace))
	if rd := m.Ready(); len(rd.Disk) != 1 || !slices.Equal(rd.Refused, []NodeID{"b"}) {
		t.Fatalf("a member gone and this one: %+v", rd)
	}
}

// TestGatedMachineReplicaSetFrames: the frames of replica sets — a drop of a unit's copy, a
// unit's digests, a tombstone collection, a unit synced — are taken only from admitted
// members, as the records are: a stranger's drop reads nothing off the disk and is refused
// once it has waited trust.AdmitGrace; an admitted member's drop is carried out.
func TestGatedMachineReplicaSetFrames(t *testing.T) {
	m, err := NewMachine(MachineConfig{Self: "a", Gated: true, AntiEntropyInterval: -1}, DiskState{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	m.SetPlacement(t0, FixedPlacement("a", "b", "c")())
	m.SetAdmitted(t0, []NodeID{"a", "b", "c"})
	u := &pb.ReplicaUnit{Type: "counter", Shard: "7"}
	frames := []*pb.ReplicaEnvelope{
		{RequestId: 1, Msg: &pb.ReplicaEnvelope_Drop{Drop: &pb.ReplicaDrop{Unit: u, MoveEpoch: 1 << 40}}},
		{RequestId: 2, Msg: &pb.ReplicaEnvelope_UnitDigest{UnitDigest: &pb.ReplicaUnits{Units: []*pb.ReplicaUnit{u}}}},
		{Msg: &pb.ReplicaEnvelope_Collect{Collect: &pb.ReplicaCollect{Unit: u, Hash: 1}}},
		{Msg: &pb.ReplicaEnvelope_Synced{Synced: u}},
	}
	for _, env := range frames {
		m.ReceiveEnvelope(t0, "x", env)
	}
	if rd := m.Ready(); !rd.Empty() {
		t.Fatalf("replica-set frames of a stranger were taken at once: %+v", rd)
	}
	m.Tick(t0.Add(trust.AdmitGrace))
	if rd := m.Ready(); len(rd.Disk) != 0 || len(rd.Sends) != 0 || len(rd.Refused) != len(frames) {
		t.Fatalf("the stranger's frames after the grace: %+v", rd)
	}
	m.ReceiveEnvelope(t0.Add(trust.AdmitGrace), "b", frames[0])
	if rd := m.Ready(); rd.Empty() || len(rd.Refused) != 0 {
		t.Fatalf("an admitted member's drop: %+v", rd)
	}
}
