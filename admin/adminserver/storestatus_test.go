package adminserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
)

// TestLocalStoreStatus: a member's hosted units are summed up per type — full, short and
// unknown sets, moves running, queued and retrying, the zones a set spans, the sets each
// member is in — its moves are listed running first, with progress, and its holdings are
// summed per type, tombstones apart.
func TestLocalStoreStatus(t *testing.T) {
	now := time.Unix(1000, 0)
	set := func(ids ...string) []membership.NodeID {
		out := make([]membership.NodeID, len(ids))
		for i, id := range ids {
			out[i] = membership.NodeID(id)
		}
		return out
	}
	unit := func(shard string, cfg remember.UnitConfig) remember.UnitStatus {
		return remember.UnitStatus{Unit: remember.Unit{Type: "counter", Shard: shard}, Epoch: 3, Config: cfg, Known: true, Moving: len(cfg.Next) > 0}
	}
	copying := unit("2", remember.UnitConfig{Set: set("a", "b", "c"), Next: set("a", "b", "d")})
	copying.Phase, copying.Copied, copying.Held, copying.Since = "copying", 120, 300, now.Add(-1500*time.Millisecond)
	queued := unit("10", remember.UnitConfig{Set: set("a", "b")})
	queued.Queued = true
	retrying := unit("3", remember.UnitConfig{Set: set("a", "b", "c"), Next: set("a", "c", "d")})
	retrying.Err = "copy: no answer"
	st := node.StoreStatus{
		ReplicationFactor: 3,
		Meta:              set("a", "b", "c"),
		Units: []remember.UnitStatus{
			unit("1", remember.UnitConfig{Set: set("a", "b", "c")}), copying, retrying, queued,
			{Unit: remember.Unit{Type: "counter", Shard: "4"}},                                                        // still read
			{Unit: remember.Unit{Type: "other", Shard: "1"}, Known: true, Config: remember.UnitConfig{Set: set("a")}}, // filtered out
		},
		Holdings: []remember.Holding{
			{Unit: remember.Unit{Type: "counter", Shard: "1"}, Keys: 10, Tombstones: 2},
			{Unit: remember.Unit{Type: "counter", Shard: "2"}, Keys: 5},
			{Unit: remember.Unit{Type: "other", Shard: "1"}, Keys: 7},
		},
		MetaKeys:  40,
		Moves:     remember.MoveLoad{Running: 1, Queued: 1, MaxMoves: 4},
		Stats:     remember.Stats{MovesStarted: 5, Moves: 3, MovesFailed: 1, Abandoned: 1, Copied: 900},
		MetaGroup: remember.MetaStatus{Replica: true, Voter: true, Leader: "b", Term: 4, Applied: 812},
	}
	zones := map[membership.NodeID]string{"a": "z1", "b": "z1", "c": "z2", "d": "z3"}
	got := localStoreStatus("a", st, zones, []string{"counter"}, now)

	if len(got.Types) != 1 {
		t.Fatalf("types %v", got.Types)
	}
	tu := got.Types[0]
	if tu.Units != 5 || tu.Full != 3 || tu.Short != 1 || tu.Unknown != 1 || tu.Moving != 2 || tu.Queued != 1 || tu.Failed != 1 || tu.ZonesMin != 1 {
		t.Errorf("counter units: %v", tu)
	}
	in := map[string]uint32{}
	for _, sc := range tu.InSets {
		in[sc.Node] = sc.Sets
	}
	if in["a"] != 4 || in["b"] != 4 || in["c"] != 3 || in["d"] != 0 {
		t.Errorf("sets per member: %v", in)
	}
	if len(got.Moves) != 3 || got.MovesTruncated {
		t.Fatalf("moves %v", got.Moves)
	}
	run := got.Moves[0]
	if run.Shard != "2" || run.Phase != "copying" || run.Copied != 120 || run.Total != 300 || run.ElapsedMs != 1500 || run.Host != "a" ||
		strings.Join(run.To, ",") != "a,b,d" || strings.Join(run.From, ",") != "a,b,c" {
		t.Errorf("running move: %v", run)
	}
	if got.Moves[1].Shard != "3" || got.Moves[1].Phase != "retrying" || got.Moves[1].Error == "" || got.Moves[2].Shard != "10" || got.Moves[2].Phase != "queued" {
		t.Errorf("moves not running: %v %v", got.Moves[1], got.Moves[2])
	}
	m := got.Member
	if m.Node != "a" || m.Zone != "z1" || !m.MetadataReplica || m.MetadataKeys != 40 || m.MovesRunning != 1 || m.MovesQueued != 1 || m.MaxMoves != 4 {
		t.Errorf("member %v", m)
	}
	if m.MetadataRole != "follower" || m.MetadataLeader != "b" || m.MetadataTerm != 4 || m.MetadataApplied != 812 || m.MetadataError != "" {
		t.Errorf("metadata group %v", m)
	}
	if c := m.Counters; c.Started != 5 || c.Finished != 3 || c.Failed != 1 || c.Abandoned != 1 || c.Copied != 900 {
		t.Errorf("counters %v", c)
	}
	if len(m.Holdings) != 1 || m.Holdings[0].Units != 2 || m.Holdings[0].Records != 13 || m.Holdings[0].Tombstones != 2 {
		t.Errorf("holdings %v", m.Holdings)
	}
}

// TestStoreStatusAddsUpAndNamesMembersThatDidNotAnswer: the asking member adds up the
// members' units, sets and moves; a member that does not answer makes the answer PARTIAL,
// named.
func TestStoreStatusAddsUpAndNamesMembersThatDidNotAnswer(t *testing.T) {
	self, fine, stuck := newID(t), newID(t), newID(t)
	part := func(id peer.ID, units, sets uint32, moves ...*adminpb.UnitMove) *adminpb.LocalStoreStatusResponse {
		return &adminpb.LocalStoreStatusResponse{ReplicationFactor: 3, Metadata: []string{self.String()},
			Member: &adminpb.MemberStore{Node: id.String(), MaxMoves: 4},
			Types: []*adminpb.LocalTypeUnits{{EntityType: "counter", Units: units, Full: units, ZonesMin: 2,
				InSets: []*adminpb.SetCount{{Node: self.String(), Sets: sets}, {Node: fine.String(), Sets: sets}, {Node: stuck.String(), Sets: 1}}}},
			Moves: moves}
	}
	b := newFakeBackend(self.String(), fine.String(), stuck.String())
	b.storeParts = part(self, 4, 4, &adminpb.UnitMove{EntityType: "counter", Shard: "9", Phase: "queued"})
	s := newTestServer(t, b, Config{QueryTimeout: 50 * time.Millisecond, ReadOnlyOpen: true})
	s.callPeer = func(ctx context.Context, to peer.ID, req *adminpb.Request) (*adminpb.Response, error) {
		if to == stuck {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if req.GetLocalStoreStatus() == nil {
			t.Errorf("asked %v", req)
		}
		return &adminpb.Response{Result: &adminpb.Response_LocalStoreStatus{LocalStoreStatus: part(fine, 2, 1,
			&adminpb.UnitMove{EntityType: "counter", Shard: "1", Phase: "copying", Copied: 5, Total: 10})}}, nil
	}
	resp := s.one(t, newID(t), &adminpb.Request{Call: &adminpb.Request_StoreStatus{StoreStatus: &adminpb.StoreStatusRequest{}}})
	st := resp.GetStoreStatus()
	if resp.Code != adminpb.Code_PARTIAL || st == nil || len(st.Failed) != 1 || st.Failed[0].Node != stuck.String() || !strings.Contains(resp.Error, stuck.String()) {
		t.Fatalf("%v", resp)
	}
	if st.ReplicationFactor != 3 || len(st.Types) != 1 || len(st.Members) != 2 {
		t.Fatalf("%v", st)
	}
	tu := st.Types[0]
	if tu.Units != 6 || tu.Full != 6 || tu.ZonesMin != 2 || tu.Members != 3 || tu.PerMemberMin != 2 || tu.PerMemberMax != 5 {
		t.Errorf("counter: %v", tu)
	}
	if len(st.Moves) != 2 || st.Moves[0].Phase != "copying" || st.Moves[1].Phase != "queued" {
		t.Errorf("moves %v", st.Moves)
	}
	for _, m := range st.Members {
		if len(m.Sets) != 1 || m.Sets[0].Sets != 5 { // 4 + 1 each: in the sets of both hosts' units
			t.Errorf("member %s in sets %v", m.Node, m.Sets)
		}
	}
	if r := s.one(t, newID(t), &adminpb.Request{Call: &adminpb.Request_StoreStatus{StoreStatus: &adminpb.StoreStatusRequest{EntityTypes: []string{"nope"}}}}); r.Code != adminpb.Code_BAD_REQUEST {
		t.Errorf("unknown type: %v", r)
	}
}

// TestHistoryPartial: a history read that reached only some replicas is answered with the
// records it has (the copies of the members that answered), PARTIAL, naming the missing
// replicas and saying the copies may be stale.
func TestHistoryPartial(t *testing.T) {
	self := newID(t)
	b := newFakeBackend(self.String())
	b.history = &adminpb.HistoryResponse{Records: []*adminpb.PlacementRecord{{EntityType: "counter", Shard: "1"}}, Missing: []string{"12D3KooWgone"}}
	s := newTestServer(t, b, Config{QueryTimeout: 50 * time.Millisecond, ReadOnlyOpen: true})
	resp := s.one(t, newID(t), &adminpb.Request{Call: &adminpb.Request_History{History: &adminpb.HistoryRequest{}}})
	if resp.Code != adminpb.Code_PARTIAL || len(resp.GetHistory().GetRecords()) != 1 || !strings.Contains(resp.Error, "12D3KooWgone") ||
		!strings.Contains(resp.Error, "possibly stale") {
		t.Fatalf("%v", resp)
	}
}

// TestMetadataRole: a member's part in the metadata group, from its view.
func TestMetadataRole(t *testing.T) {
	for _, tc := range []struct {
		st   remember.MetaStatus
		want string
	}{
		{remember.MetaStatus{Replica: true, Voter: true, Leader: "a"}, "leader"},
		{remember.MetaStatus{Replica: true, Voter: true, Leader: "b"}, "follower"},
		{remember.MetaStatus{Replica: true, Voter: true}, "follower"}, // an election
		{remember.MetaStatus{Replica: true, Leader: "b"}, "joining"},
		{remember.MetaStatus{}, "none"},
		{remember.MetaStatus{Err: errors.New("damaged")}, "stopped"},
	} {
		if got := metadataRole("a", tc.st); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.st, got, tc.want)
		}
	}
}
