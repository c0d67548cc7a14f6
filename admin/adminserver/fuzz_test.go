package adminserver

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/trust"
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

// FuzzSignedRequests feeds a server mutations of requests an admin signed for it: whatever
// changes the cluster carries, byte for byte, a body the admin signed (the fuzzer cannot
// forge a signature, re-target a request or lift its call out of the signed body).
func FuzzSignedRequests(f *testing.F) {
	self, adminID, intruder := newID(f), newID(f), newID(f)
	key, _ := testKeys.Load(adminID)
	signedBodies := map[string]bool{}
	for _, req := range []*adminpb.Request{
		leaveCall, downCall(self.String(), true, false),
		directiveCall(&adminpb.DirectiveRequest{Kind: "pause"}),
		{Call: &adminpb.Request_DataRemove{DataRemove: &adminpb.DataRemoveRequest{EntityTypes: []string{"counter"}}}},
	} {
		signed, err := admin.SignRequest(req, key.(crypto.PrivKey), nil, self, time.Now())
		if err != nil {
			f.Fatal(err)
		}
		s, _ := trust.OpenSigned(signed.Signed)
		signedBodies[string(s.Body)] = true
		f.Add(marshal(f, signed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		b := newFakeBackend(self.String())
		b.stopped = []string{"counter"}
		close(b.done)
		s := newTestServer(t, b, Config{Admins: []peer.ID{adminID}})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if out := s.callFrame(ctx, intruder, frame); len(out) == 0 {
			t.Fatalf("no answer to %x", frame)
		}
		if len(b.downed)+b.shutdowns+b.directives+b.removals == 0 {
			return
		}
		var outer adminpb.Request
		if err := proto.Unmarshal(frame, &outer); err != nil {
			t.Fatalf("a frame that does not decode changed the cluster: %x", frame)
		}
		sg, err := trust.OpenSigned(outer.Signed)
		if err != nil || sg.Signer != adminID || !signedBodies[string(sg.Body)] {
			t.Fatalf("changed the cluster without a body the admin signed: %x (%v)", frame, err)
		}
	})
}
