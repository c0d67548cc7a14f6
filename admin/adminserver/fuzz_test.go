package adminserver

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/wire"
)

func marshal(t testing.TB, req *adminpb.Request) []byte {
	t.Helper()
	req.ProtocolVersion = wire.ProtocolVersion
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzServe feeds arbitrary request frames to a server (as any peer holding the cluster
// key may): it answers every one, never panics, and a call that is not an admin's never
// changes anything.
func FuzzServe(f *testing.F) {
	for _, req := range []*adminpb.Request{
		membersCall, askCall, leaveCall, shutdownCall, downCall("12D3KooWJj2DY3nGiJfExXY3qJsk2KXm2LqJpSFNCrzxzsteCcLB", true, false),
		{Call: &adminpb.Request_Stats{Stats: &adminpb.StatsRequest{EntityTypes: []string{"counter"}, TimeoutMs: 1}}},
		{Call: &adminpb.Request_Locate{Locate: &adminpb.LocateRequest{EntityType: "counter", Entity: "u1"}}},
		{Call: &adminpb.Request_RegionState{RegionState: &adminpb.RegionStateRequest{EntityType: "counter"}}},
		{Call: &adminpb.Request_Health{Health: &adminpb.HealthRequest{}}},
		{Call: &adminpb.Request_Watch{Watch: &adminpb.WatchRequest{NoMembers: true}}},
		{Call: &adminpb.Request_ShardInfo{ShardInfo: &adminpb.ShardInfoRequest{EntityType: "counter", Shard: "1", Entity: "x"}}},
	} {
		f.Add(marshal(f, req))
	}
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x63})
	self := newID(f)
	caller := newID(f)
	f.Fuzz(func(t *testing.T, frame []byte) {
		b := newFakeBackend(self.String())
		close(b.done) // a shutdown that is followed ends at once
		s := newTestServer(t, b, Config{ReadOnlyOpen: true})
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // streaming calls end at once
		out := s.callFrame(ctx, caller, frame)
		if len(out) == 0 {
			t.Fatalf("no answer to %x", frame)
		}
		if len(b.downed) > 0 || b.shutdowns > 0 {
			t.Fatalf("a caller without an admin identity changed the cluster: %x", frame)
		}
	})
}
