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
				MetadataRole: "leader", MetadataLeader: peerA, MetadataTerm: 3, MetadataApplied: 812,
				Holdings: []*adminpb.TypeHolding{{EntityType: "counter", Units: 9, Records: 120, Tombstones: 3}},
				Sets:     []*adminpb.TypeSets{{EntityType: "counter", Sets: 11}},
				Counters: &adminpb.MoveCounters{Started: 4, Finished: 2, Failed: 1, Abandoned: 0, Copied: 900}},
			{Node: peerB, MaxMoves: 4, MetadataRole: "stopped", MetadataTerm: 2, MetadataError: "metaraft: the member stopped: no space left on device"},
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
		"metadata group: leader …memberA1, term 3; 1 voters answered, applied 812; replica STOPPED on …memberB2 (metaraft: the member stopped: no space left on device)",
		"…memberA1  z1    1/4 +1 queued  counter  11       9            120      3           leader (40 keys, applied 812)",
		"…memberB2  -     0/4            -        0        0            0        0           STOPPED",
		"counter  7      …memberA1  copying  30/~120 (25%)  1.5s     …memberA1,…memberB2,…memberC3  …memberA1,…memberB2",
		"counter  8      …memberA1  queued   -              -        …memberA1                      -",
		"…memberA1 moves since start: 4 started, 2 finished, 1 failed, 0 abandoned; 900 records copied",
		"DID NOT ANSWER: …memberC3 (no answer within 3s)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if out.Complete || out.Members[0].MetadataRole != "leader" || out.Members[0].MetadataApplied != 812 || out.Members[1].MetadataError == "" || len(out.Members[1].Types) != 0 || out.Members[1].Types == nil || out.Moves[0].Epoch != "1.3" {
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

// TestMetadataGroupLine: the line on the metadata group names its leader, or says there is
// none, or that several members claim it; how far the voters applied; stopped replicas.
func TestMetadataGroupLine(t *testing.T) {
	voter := func(node, role, leader string, term, applied uint64) storeMemberJSON {
		return storeMemberJSON{Node: node, MetadataRole: role, MetadataLeader: leader, MetadataTerm: term, MetadataApplied: applied}
	}
	for _, tc := range []struct {
		ms   []storeMemberJSON
		want string
	}{
		{[]storeMemberJSON{voter(peerA, "leader", peerA, 4, 100), voter(peerB, "follower", peerA, 4, 97), voter(peerC, "none", peerA, 0, 0)},
			"metadata group: leader …memberA1, term 4; 2 voters answered, applied 100 (the furthest behind: 97)"},
		{[]storeMemberJSON{voter(peerA, "follower", "", 6, 100), voter(peerB, "follower", "", 6, 100)},
			"metadata group: NO LEADER known (term 6): metadata calls wait for an election, or a majority of the voters; 2 voters answered, applied 100"},
		{[]storeMemberJSON{voter(peerA, "leader", peerA, 6, 100), voter(peerB, "leader", peerB, 7, 100), voter(peerC, "follower", peerB, 7, 100)},
			"metadata group: 2 members say they lead (…memberA1, …memberB2; term 7): an election is under way; 3 voters answered, applied 100; members name 2 different leaders"},
		{[]storeMemberJSON{{Node: peerA, MetadataReplica: true}},
			"metadata group: no member reported its part (members of an earlier release)"},
	} {
		if got := metadataGroupLine(tc.ms); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
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
