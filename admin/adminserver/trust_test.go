package adminserver

import (
	"context"
	"strings"
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

// signedFrame returns req signed by id's key for member target, with credential, as a frame.
func signedFrame(t *testing.T, id peer.ID, credential []byte, target peer.ID, req *adminpb.Request) []byte {
	t.Helper()
	key, _ := testKeys.Load(id)
	signed, err := admin.SignRequest(req, key.(crypto.PrivKey), credential, target, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	signed.ProtocolVersion = wire.ProtocolVersion
	frame, err := proto.Marshal(signed)
	if err != nil {
		t.Fatal(err)
	}
	return frame
}

func lastOf(out []*adminpb.Response) *adminpb.Response { return out[len(out)-1] }

// TestSignedCalls: a call that changes the cluster is carried out only when an admin of
// this member signed it, for this member, once; an admin credential of a trusted authority
// makes an admin; each call taken, and each signed call refused, is audited, and the audit
// verifies every record again.
func TestSignedCalls(t *testing.T) {
	self, other, adminID, certified, intruder := newID(t), newID(t), newID(t), newID(t), newID(t)
	auth := newID(t)
	authKey, _ := testKeys.Load(auth)
	cred, err := trust.IssueCredential(authKey.(crypto.PrivKey), trust.RoleAdmin, certified, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b := newFakeBackend(self.String(), other.String())
	s := newTestServer(t, b, Config{Admins: []peer.ID{adminID}, Authorities: []peer.ID{auth}})
	drain := directiveCall(&adminpb.DirectiveRequest{Kind: "drain", Node: other.String()})
	ctx := context.Background()

	frame := signedFrame(t, adminID, nil, self, drain)
	if r := lastOf(s.callFrame(ctx, adminID, frame)); r.Code != adminpb.Code_OK {
		t.Fatalf("the admin's drain: %v %s", r.Code, r.Error)
	}
	for name, c := range map[string]struct {
		frame  []byte
		errHas string
	}{
		"replayed":            {frame, "carried out already"},
		"for another member":  {signedFrame(t, adminID, nil, other, drain), "signed for member " + `"` + other.String()},
		"by an intruder":      {signedFrame(t, intruder, nil, self, drain), intruder.String()},
		"a stolen credential": {signedFrame(t, intruder, cred, self, drain), "issued to " + certified.String()},
	} {
		r := lastOf(s.callFrame(ctx, other, c.frame))
		if r.Code != adminpb.Code_REFUSED || !strings.Contains(r.Error, c.errHas) {
			t.Errorf("%s: %v %q, want REFUSED containing %q", name, r.Code, r.Error, c.errHas)
		}
	}
	if r := lastOf(s.callFrame(ctx, certified, signedFrame(t, certified, cred, self, drain))); r.Code != adminpb.Code_OK {
		t.Errorf("the holder of an admin credential: %v %s", r.Code, r.Error)
	}
	_, pub, _ := crypto.GenerateEd25519Key(nil)
	unsigned, _ := peer.IDFromPublicKey(pub) // not in testKeys: its calls go unsigned
	if r := s.one(t, unsigned, &adminpb.Request{Call: drain.Call}); r.Code != adminpb.Code_REFUSED || !strings.Contains(r.Error, "unsigned") {
		t.Errorf("an unsigned drain: %v %s", r.Code, r.Error)
	}
	if b.directives != 2 {
		t.Errorf("%d directives stored, want 2", b.directives)
	}

	// Audited: the two drains carried out and the four signed refusals.
	a := s.one(t, other, &adminpb.Request{Call: &adminpb.Request_Audit{Audit: &adminpb.AuditRequest{}}}).GetAudit()
	if len(a.GetRecords()) != 6 {
		t.Fatalf("%d audit records, want 6: %v", len(a.GetRecords()), a)
	}
	ok, verified := 0, 0
	for _, rec := range a.Records {
		if rec.Outcome == "ok" {
			ok++
			if rec.Call != "drain" || !strings.Contains(rec.Args, other.String()) || rec.Member != self.String() {
				t.Errorf("audit record: %+v", rec)
			}
		}
		if rec.Verified {
			verified++
		}
		if rec.Caller == intruder.String() && rec.Verified {
			t.Errorf("the intruder's call is verified: %+v", rec)
		}
	}
	if ok != 2 || verified != 4 { // the admin's drain, its replay, the one for another member, the credential holder's
		t.Errorf("%d records ok (want 2), %d verified (want 4)", ok, verified)
	}
}

// TestDataRemoveNeedsEveryMembersConsent: a data remove is carried out only when every member
// that answers consents: it verifies the signature against its own admin set and has the
// type out of service by a directive it follows.
func TestDataRemoveNeedsEveryMembersConsent(t *testing.T) {
	self, other, adminID := newID(t), newID(t), newID(t)
	b := newFakeBackend(self.String(), other.String())
	b.stopped = []string{"counter"}
	b.stats.Regions[0].Shards = nil
	s := newTestServer(t, b, Config{Admins: []peer.ID{adminID}})
	// The other member has another admin set: it does not consent.
	otherServer := newTestServer(t, newFakeBackend(other.String(), self.String()), Config{Admins: []peer.ID{newID(t)}})
	otherServer.backend.stopped = []string{"counter"}
	otherServer.backend.stats.Regions[0].Shards = nil
	s.callPeer = func(ctx context.Context, _ peer.ID, req *adminpb.Request) (*adminpb.Response, error) {
		return otherServer.answer(ctx, req), nil
	}
	remove := &adminpb.Request{Call: &adminpb.Request_DataRemove{DataRemove: &adminpb.DataRemoveRequest{EntityTypes: []string{"counter"}}}}
	r := lastOf(s.call(t, adminID, remove))
	if r.Code != adminpb.Code_REFUSED || !strings.Contains(r.Error, "member "+other.String()+" refuses") || !strings.Contains(r.Error, "not an admin") {
		t.Fatalf("a member with another admin set: %v %s", r.Code, r.Error)
	}
	if b.removals != 0 {
		t.Fatalf("removed without every member's consent")
	}
	otherServer.policy = s.policy // the same admins now
	if r := lastOf(s.call(t, adminID, remove)); r.Code != adminpb.Code_OK {
		t.Fatalf("with every member's consent: %v %s", r.Code, r.Error)
	}
	if b.removals != 1 {
		t.Fatalf("%d removals, want 1", b.removals)
	}
}

// TestDirectiveNotFollowed: a directive change returns once every member that answers
// follows it; one that does not (it takes the signer for no admin of its own) is named, and
// the code is PARTIAL.
func TestDirectiveNotFollowed(t *testing.T) {
	self, other, adminID := newID(t), newID(t), newID(t)
	b := newFakeBackend(self.String(), other.String())
	s := newTestServer(t, b, Config{Admins: []peer.ID{adminID}})
	s.followWait = 300 * time.Millisecond
	otherServer := newTestServer(t, newFakeBackend(other.String(), self.String()), Config{})
	s.callPeer = func(ctx context.Context, _ peer.ID, req *adminpb.Request) (*adminpb.Response, error) {
		return otherServer.answer(ctx, req), nil
	}
	r := s.one(t, adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "pause"}))
	if r.Code != adminpb.Code_PARTIAL || !strings.Contains(r.Error, other.String()) ||
		len(r.GetDirectives().GetNotFollowing()) != 1 || !r.GetDirectives().RebalancePaused {
		t.Fatalf("a member that does not follow: %v %q %v", r.Code, r.Error, r.GetDirectives())
	}
	otherServer.backend.paused = true // it follows now
	if r := s.one(t, adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "pause"})); r.Code != adminpb.Code_OK {
		t.Fatalf("every member follows: %v %q", r.Code, r.Error)
	}
}
