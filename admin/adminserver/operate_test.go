package adminserver

import (
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

func directiveCall(d *adminpb.DirectiveRequest) *adminpb.Request {
	return &adminpb.Request{Call: &adminpb.Request_Directive{Directive: d}}
}

func TestOperationsNeedAnAdminAndValidInput(t *testing.T) {
	self, other, adminID, stranger := newID(t), newID(t), newID(t), newID(t)
	b := newFakeBackend(self.String(), other.String())
	s := newTestServer(t, b, Config{Admins: []peer.ID{adminID}, ReadOnlyOpen: true})
	cases := []struct {
		name   string
		caller peer.ID
		req    *adminpb.Request
		want   adminpb.Code
		errHas string
	}{
		{"stranger drains", stranger, directiveCall(&adminpb.DirectiveRequest{Kind: "drain", Node: other.String()}), adminpb.Code_REFUSED, "drain changes the cluster"},
		{"member stops a type", other, directiveCall(&adminpb.DirectiveRequest{Kind: "stop", EntityType: "counter"}), adminpb.Code_REFUSED, "types-stop"},
		{"stranger moves a shard", stranger, directiveCall(&adminpb.DirectiveRequest{Kind: "pin", EntityType: "counter", Shard: "1", Node: other.String()}), adminpb.Code_REFUSED, "shard-pin"},
		{"stranger removes data", stranger, &adminpb.Request{Call: &adminpb.Request_DataRemove{DataRemove: &adminpb.DataRemoveRequest{EntityTypes: []string{"counter"}}}}, adminpb.Code_REFUSED, "data-remove"},
		{"stranger removes one shard's data", stranger, &adminpb.Request{Call: &adminpb.Request_DataRemove{DataRemove: &adminpb.DataRemoveRequest{EntityTypes: []string{"counter"}, Shard: "7"}}}, adminpb.Code_REFUSED, "data-remove"},
		{"member removes one entity's data", other, &adminpb.Request{Call: &adminpb.Request_DataRemove{DataRemove: &adminpb.DataRemoveRequest{EntityTypes: []string{"counter"}, Entity: "user-1"}}}, adminpb.Code_REFUSED, "data-remove"},
		{"overlong shard id", adminID, &adminpb.Request{Call: &adminpb.Request_DataRemove{DataRemove: &adminpb.DataRemoveRequest{EntityTypes: []string{"counter"}, Shard: strings.Repeat("7", 300)}}}, adminpb.Code_BAD_REQUEST, "shard id"},
		{"stranger reads reminders", stranger, &adminpb.Request{Call: &adminpb.Request_Reminders{Reminders: &adminpb.RemindersRequest{EntityType: "counter"}}}, adminpb.Code_OK, ""},
		{"reminders of an overlong entity", stranger, &adminpb.Request{Call: &adminpb.Request_Reminders{Reminders: &adminpb.RemindersRequest{EntityType: "counter", Entity: strings.Repeat("e", 2000)}}}, adminpb.Code_BAD_REQUEST, "entity id"},
		{"stranger reads directives", stranger, &adminpb.Request{Call: &adminpb.Request_Directives{Directives: &adminpb.DirectivesRequest{}}}, adminpb.Code_OK, ""},
		{"unknown type", adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "stop", EntityType: "nope"}), adminpb.Code_BAD_REQUEST, `unknown entity type "nope"`},
		{"unknown member", adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "drain", Node: newID(t).String()}), adminpb.Code_BAD_REQUEST, "unknown member"},
		{"not a peer id", adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "drain", Node: "node-3"}), adminpb.Code_BAD_REQUEST, "not a member id"},
		{"unknown directive", adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "explode"}), adminpb.Code_BAD_REQUEST, "unknown directive"},
		{"empty shard", adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "pin", EntityType: "counter", Node: other.String()}), adminpb.Code_BAD_REQUEST, "shard id"},
		{"shard not of the type", adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "pin", EntityType: "counter", Shard: "bad", Node: other.String()}), adminpb.Code_BAD_REQUEST, `counter: shard "bad": not a shard`},
		{"unpin of a shard not pinned", adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "pin", EntityType: "counter", Shard: "7", Undo: true}), adminpb.Code_REFUSED, "shard 7 of counter is not pinned"},
		{"data remove of a running type", adminID, &adminpb.Request{Call: &adminpb.Request_DataRemove{DataRemove: &adminpb.DataRemoveRequest{EntityTypes: []string{"counter"}}}}, adminpb.Code_REFUSED, "in service"},
		{"admin drains", adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "drain", Node: other.String()}), adminpb.Code_OK, ""},
	}
	for _, c := range cases {
		out := s.call(t, c.caller, c.req)
		last := out[len(out)-1]
		if last.Code != c.want || !strings.Contains(last.Error, c.errHas) {
			t.Errorf("%s: %v %q, want %v containing %q", c.name, last.Code, last.Error, c.want, c.errHas)
		}
	}
	if b.directives != 1 {
		t.Errorf("%d directives stored, want 1 (the admin's drain)", b.directives)
	}
	if b.removals != 0 {
		t.Errorf("refused data removals removed something (%d calls)", b.removals)
	}
}

// An unpin while the directives cannot be read is refused and stores nothing: it would
// otherwise succeed whether or not the shard is pinned.
func TestUnpinRefusedWhileDirectivesUnread(t *testing.T) {
	self, adminID := newID(t), newID(t)
	b := newFakeBackend(self.String())
	b.readErr = errors.New("remember: the metadata group did not answer: no quorum")
	s := newTestServer(t, b, Config{Admins: []peer.ID{adminID}})
	out := s.call(t, adminID, directiveCall(&adminpb.DirectiveRequest{Kind: "pin", EntityType: "counter", Shard: "7", Undo: true}))
	last := out[len(out)-1]
	if last.Code != adminpb.Code_FAILED || !strings.Contains(last.Error, "nothing changed") || !strings.Contains(last.Error, "did not answer") ||
		!strings.Contains(last.Error, "try again") {
		t.Errorf("unpin with unreadable directives: %v %q", last.Code, last.Error)
	}
	if b.directives != 0 {
		t.Errorf("%d directives stored, want none", b.directives)
	}
}
