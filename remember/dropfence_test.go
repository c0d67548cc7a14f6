package remember

import (
	"strings"
	"testing"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// diskLike runs a machine's disk operations as the disks do: reads at once, applies one at
// a time in order (a read does not wait for the applies queued before it).
type diskLike struct {
	t       *testing.T
	m       *Machine
	d       *MemDisk
	applies []DiskOp
	acks    map[NodeID][]*pb.ReplicaEnvelope
}

// take collects what the machine asked for: reads run now, applies queue, frames are kept.
func (dl *diskLike) take() {
	rd := dl.m.Ready()
	for _, s := range rd.Sends {
		env, err := wire.DecodeReplica(s.Frame)
		if err != nil {
			dl.t.Fatal(err)
		}
		dl.acks[s.To] = append(dl.acks[s.To], env)
	}
	for _, op := range rd.Disk {
		if op.Kind == DiskApply {
			dl.applies = append(dl.applies, op)
			continue
		}
		dl.m.DiskDone(t0, dl.d.Do(op))
		dl.take()
	}
}

// commit carries out the oldest queued apply.
func (dl *diskLike) commit() {
	op := dl.applies[0]
	dl.applies = dl.applies[1:]
	dl.m.DiskDone(t0, dl.d.Do(op))
	dl.take()
}

// settle commits every apply, and those they lead to.
func (dl *diskLike) settle() {
	for len(dl.applies) > 0 {
		dl.commit()
	}
}

// write feeds machine a peer's write of key under configuration generation gen.
func (dl *diskLike) write(from NodeID, req uint64, key string, gen uint64) {
	dl.m.ReceiveEnvelope(t0, from, &pb.ReplicaEnvelope{RequestId: req, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{
		Records:  []*pb.ReplicaRecord{{Key: []byte(key), Value: []byte("v"), Epoch: 1, Counter: req, Writer: string(from)}},
		UnitGens: []*pb.UnitGen{{Unit: &pb.ReplicaUnit{Type: "t", Shard: "1"}, Gen: gen}}}}})
	dl.take()
}

// holds reports whether the disk holds a live record of key.
func (dl *diskLike) holds(key string) bool {
	for _, r := range dl.d.Records() {
		if r.Key == key && !r.Deleted {
			return true
		}
	}
	return false
}

// TestDroppedReplicaTakesNoEarlierWrite: a former replica drops its copy of a unit with
// the writes it took just before the drop (still queued for its disk when the drop came),
// and refuses the writes that come after it under an earlier configuration — a round's
// frame that arrives late, or a host whose configuration was replaced — naming the
// configurations. A write under a later configuration (one that names it again) is taken.
// Before, the drop read the unit while the write was still queued and discarded only what
// it read, and a late write was stored: records on a member no set names, never read nor
// collected (reminder soak seed 20).
func TestDroppedReplicaTakesNoEarlierWrite(t *testing.T) {
	m := roundMachine(t, 3)
	delete(m.units, Unit{Type: "t", Shard: "1"}) // "a" is a replica only, of a set moving off it
	dl := &diskLike{t: t, m: m, d: NewMemDisk(), acks: map[NodeID][]*pb.ReplicaEnvelope{}}

	dl.write("b", 1, "u/1/x", 2) // taken, not yet on disk when the drop comes
	m.ReceiveEnvelope(t0, "b", &pb.ReplicaEnvelope{RequestId: 2, Msg: &pb.ReplicaEnvelope_Drop{Drop: &pb.ReplicaDrop{
		Unit: &pb.ReplicaUnit{Type: "t", Shard: "1"}, MoveEpoch: 1, MoveSeq: 1, ConfigGen: 3}}})
	dl.take()
	dl.settle()
	if dl.holds("u/1/x") {
		t.Fatal("the write taken just before the drop outlived it")
	}

	dl.write("c", 3, "u/1/y", 2) // late: routed by the configuration before the drop's
	dl.settle()
	if dl.holds("u/1/y") {
		t.Fatal("a write of an earlier configuration was stored after the drop")
	}
	last := dl.acks["c"][len(dl.acks["c"])-1].GetWriteAck()
	if last == nil || !strings.Contains(last.Error, "stale replica configuration") || !strings.Contains(last.Error, "configuration 3, the write was routed by 2") {
		t.Fatalf("answer to the late write: %v", last)
	}

	dl.write("c", 4, "u/1/z", 4) // a configuration that names it again
	dl.settle()
	if !dl.holds("u/1/z") {
		t.Fatal("a write of a later configuration was not stored")
	}
}
