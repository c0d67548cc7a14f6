package remember

import (
	"testing"

	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

func metaWrite(key, value string, epoch, counter uint64) *pb.ReplicaRecord {
	e := entry{rec: Record{Key: key, Value: []byte(value), Version: Version{Epoch: epoch, Counter: counter, Writer: "w"}}}
	e.hash = valueHash(e.rec.Value, false)
	return toPB(&e, false)
}

// The metadata group applies proposals with the disks' rule: fencing, floors, the merge
// rule; every voter's records hold the same after the same log, snapshots included.
func TestMetaRecordsApplyTheDisksRule(t *testing.T) {
	var mirrored int
	a := newMetaRecords(func(cs []change) { mirrored += len(cs) })
	apply := func(p *pb.MetaProposal) *pb.MetaResult {
		t.Helper()
		res, err := wire.DecodeMetaResult(a.Apply(0, wire.Marshal(p)))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := apply(&pb.MetaProposal{Writes: []*pb.ReplicaRecord{metaWrite("t/a", "1", 3, 1)}}); len(r.Refused) != 0 {
		t.Fatalf("first write refused: %v", r.Refused)
	}
	// A fenced read raises the floor and answers the entry.
	r := apply(&pb.MetaProposal{FenceKeys: [][]byte{[]byte("t/a")}, Fences: []uint64{5}})
	if len(r.Fenced) != 1 || r.Fenced[0].Floor != 5 || string(r.Fenced[0].Value) != "1" {
		t.Fatalf("fenced read answered %v", r.Fenced)
	}
	// A write below the floor is refused and names the floor; one at it lands.
	r = apply(&pb.MetaProposal{Writes: []*pb.ReplicaRecord{metaWrite("t/a", "old", 4, 2), metaWrite("t/b", "2", 0, 3)}})
	if len(r.Refused) != 1 || r.Refused[0].Index != 0 || r.Refused[0].Floor != 5 {
		t.Fatalf("refusals %v, want write 0 refused with floor 5", r.Refused)
	}
	apply(&pb.MetaProposal{Writes: []*pb.ReplicaRecord{metaWrite("t/a", "new", 5, 4)}})
	if e := a.get("t/a"); string(e.rec.Value) != "new" || e.floor != 5 {
		t.Fatalf("t/a holds %q floor %d", e.rec.Value, e.floor)
	}
	// Merges keep the newer record.
	apply(&pb.MetaProposal{Merges: []*pb.ReplicaRecord{metaWrite("t/a", "stale", 1, 9), metaWrite("t/c", "3", 0, 1)}})
	if got := a.scan("t/", ""); len(got) != 3 || string(got[0].rec.Value) != "new" || got[2].rec.Key != "t/c" {
		t.Fatalf("scan t/ = %v", got)
	}
	// A damaged entry changes nothing, on every voter alike.
	if res := a.Apply(0, []byte{0xff, 0xff}); res != nil || a.skipped != 1 {
		t.Fatalf("damaged entry: result %v, skipped %d", res, a.skipped)
	}
	// A snapshot restores the same state in another voter.
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b := newMetaRecords(nil)
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	for k, e := range a.entries {
		got := b.get(k)
		if !sameState(&got, &e) {
			t.Fatalf("restored %q = %+v, want %+v", k, got, e)
		}
	}
	if mirrored == 0 {
		t.Fatal("nothing was mirrored to the disk")
	}
	if err := b.Restore([]byte("not a snapshot")); err == nil {
		t.Fatal("a damaged snapshot restored")
	}
}
