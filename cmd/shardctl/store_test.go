package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

const (
	peerA = "12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAmemberA1"
	peerB = "12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBmemberB2"
	peerC = "12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCmemberC3"
)

func storeSample() *adminpb.StoreStatusResponse {
	return &adminpb.StoreStatusResponse{Node: peerA, ReplicationFactor: 3, Metadata: []string{peerA, peerB, peerC}, TimeoutMs: 3000,
		Types: []*adminpb.TypeUnits{{EntityType: "counter", Units: 10, Full: 9, Short: 1, Moving: 1, Queued: 1, ZonesMin: 2, Members: 3, PerMemberMin: 9, PerMemberMax: 11}},
		Members: []*adminpb.MemberStore{
			{Node: peerA, Zone: "z1", MovesRunning: 1, MovesQueued: 1, MaxMoves: 4, MetadataReplica: true, MetadataKeys: 40,
				Holdings: []*adminpb.TypeHolding{{EntityType: "counter", Units: 9, Records: 120, Tombstones: 3}},
				Sets:     []*adminpb.TypeSets{{EntityType: "counter", Sets: 11}},
				Counters: &adminpb.MoveCounters{Started: 4, Finished: 2, Failed: 1, Abandoned: 0, Copied: 900}},
			{Node: peerB, MaxMoves: 4},
		},
		Moves: []*adminpb.UnitMove{
			{EntityType: "counter", Shard: "7", Host: peerA, Epoch: 1<<32 | 3, From: []string{peerA, peerB, peerC}, To: []string{peerA, peerB}, Phase: "copying", Copied: 30, Total: 120, ElapsedMs: 1500},
			{EntityType: "counter", Shard: "8", Host: peerA, From: []string{peerA}, Phase: "queued"},
		},
		Failed: []*adminpb.FailedMember{{Node: peerC, Error: "no answer within 3s"}},
	}
}

// TestStoreStatusOutput: the table names the types' units and spread, each member's part
// (moves against the limit, sets, records held, the metadata), the moves with progress and
// elapsed time, the members that did not answer; the JSON has every list even when empty;
// a member missing is exit code 3, naming it.
func TestStoreStatusOutput(t *testing.T) {
	out := storeStatusView(storeSample())
	var b bytes.Buffer
	printStoreStatus(&b, out)
	text := b.String()
	for _, want := range []string{
		"replication factor 3; cluster metadata on …memberA1, …memberB2, …memberC3",
		"counter  10     9     1      1       1       0       9–11 on 3 members  ≥ 2",
		"…memberA1  z1    1/4 +1 queued  counter  11       9            120      3           yes (40 keys)",
		"…memberB2  -     0/4            -        0        0            0        0           -",
		"counter  7      …memberA1  copying  30/~120 (25%)  1.5s     …memberA1,…memberB2,…memberC3  …memberA1,…memberB2",
		"counter  8      …memberA1  queued   -              -        …memberA1                      -",
		"…memberA1 moves since start: 4 started, 2 finished, 1 failed, 0 abandoned; 900 records copied",
		"DID NOT ANSWER: …memberC3 (no answer within 3s)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if out.Complete || len(out.Members[1].Types) != 0 || out.Members[1].Types == nil || out.Moves[0].Epoch != "1.3" {
		t.Errorf("view: %+v", out)
	}
	err := partialStore(out)
	if cmdline.ExitCode(err, exitFailed) != exitPartial || !strings.Contains(err.Error(), peerC) {
		t.Errorf("partial: %v", err)
	}
	empty := storeStatusView(&adminpb.StoreStatusResponse{ReplicationFactor: 3})
	if empty.Types == nil || empty.Members == nil || empty.Moves == nil || empty.Failed == nil || empty.Metadata == nil || partialStore(empty) != nil {
		t.Errorf("empty view: %+v", empty)
	}
	b.Reset()
	printStoreStatus(&b, empty)
	if !strings.Contains(b.String(), "no shard hosted yet") || !strings.Contains(b.String(), "no move in progress") {
		t.Errorf("empty output:\n%s", b.String())
	}
}

// TestStatsShowsReplicaHoldings: stats shows what each member holds as a replica, and the
// records on the replicas per type.
func TestStatsShowsReplicaHoldings(t *testing.T) {
	st := &adminpb.StatsResponse{Node: peerA, EntityTypes: []string{"counter"}, Members: []*adminpb.LocalStatsResponse{
		{Node: peerA, Status: "Up", Regions: []*adminpb.RegionStats{{EntityType: "counter", Registered: true, Shards: []*adminpb.ShardStats{{Shard: "1", Entities: 2}},
			Holding: &adminpb.TypeHolding{EntityType: "counter", Units: 3, Records: 40, Tombstones: 2}}}},
		{Node: peerB, Status: "Up", Regions: []*adminpb.RegionStats{{EntityType: "counter", Registered: true}}},
	}}
	out := statsView(st)
	if out.Regions[0].HeldUnits != 3 || out.Regions[0].HeldRecords != 40 || out.Regions[0].HeldTombstones != 2 || out.Totals[0].HeldRecords != 40 {
		t.Fatalf("view: %+v", out)
	}
	var b bytes.Buffer
	printStats(&b, out)
	text := b.String()
	for _, want := range []string{"REPLICA OF", "3 shards    40 (+2 tombstones)", "0 shards    0", "counter: 1 shards, 2 live entities on 2 members; 40 records on their replicas"} {
		if !strings.Contains(text, want) {
			t.Errorf("stats lacks %q:\n%s", want, text)
		}
	}
}
