package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/trust"
)

type testIdentity struct {
	key crypto.PrivKey
	id  peer.ID
}

func newIdentity(t *testing.T) testIdentity {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(k)
	return testIdentity{k, id}
}

// directiveRecord returns the stored record of change c, signed by signer (nil: unsigned)
// at issued, under the key its signer and subject give.
func directiveRecord(t *testing.T, signer *testIdentity, c DirectiveChange, issued time.Time) remember.Record {
	t.Helper()
	req := &adminpb.Request{Call: &adminpb.Request_Directive{Directive: &adminpb.DirectiveRequest{
		Kind: c.Kind, Node: string(c.Node), EntityType: c.Type, Shard: string(c.Shard), Undo: c.Undo}}}
	body, err := admin.RequestBody(req, "", issued)
	if err != nil {
		t.Fatal(err)
	}
	raw := trust.Unsigned(body)
	sd := signedDirective{change: c}
	if signer != nil {
		if raw, err = trust.Sign(signer.key, body, nil); err != nil {
			t.Fatal(err)
		}
		sd.signer = signer.id
	}
	return remember.Record{Key: sd.key(), Value: raw}
}

// directivesNode is a member with just what following directives needs.
func directivesNode(t *testing.T, policy *trust.Policy) (*Node, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	gate, err := trust.NewGate(trust.GateConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &Node{cfg: Config{Trust: policy}, log: slog.New(slog.NewTextHandler(&logs, nil)), gate: gate}, &logs
}

// TestFollowedDirectives: a member follows, per directive, the latest record signed by one
// of its admins, a set or an undo; records by others, unsigned ones and ones moved to
// another key change nothing and are logged once.
func TestFollowedDirectives(t *testing.T) {
	admin1, admin2, intruder := newIdentity(t), newIdentity(t), newIdentity(t)
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	n, logs := directivesNode(t, trust.NewPolicy(nil, []peer.ID{admin1.id, admin2.id}))
	m2 := membership.NodeID(newIdentity(t).id.String())
	moved := directiveRecord(t, &admin1, DirectiveChange{Kind: directiveStop, Type: "echo"}, t0)
	moved.Key = datadir.Key(datadir.FamilyDirective, admin1.id.String(), directiveStop, "counter")
	recs := []remember.Record{
		directiveRecord(t, &admin1, DirectiveChange{Kind: directivePause}, t0),
		directiveRecord(t, &admin2, DirectiveChange{Kind: directivePause, Undo: true}, t0.Add(time.Second)), // resumed later: not paused
		directiveRecord(t, &admin1, DirectiveChange{Kind: directiveDrain, Node: m2}, t0),
		directiveRecord(t, &intruder, DirectiveChange{Kind: directiveDrain, Node: m2, Undo: true}, t0.Add(time.Hour)), // ignored
		directiveRecord(t, &intruder, DirectiveChange{Kind: directiveStop, Type: "counter"}, t0),                      // ignored
		directiveRecord(t, nil, DirectiveChange{Kind: directiveStop, Type: "register"}, t0),                           // unsigned: ignored
		moved, // signed for echo, stored as counter's: ignored
		directiveRecord(t, &admin2, DirectiveChange{Kind: directivePin, Type: "counter", Shard: "7", Node: m2}, t0),
		{Key: datadir.Key(datadir.FamilyDirective, directiveStop, "legacy"), Value: []byte{1}}, // an earlier release's: ignored with admins
	}
	d := n.followedDirectives(recs)
	if d.RebalancePaused || !d.Draining[m2] || len(d.Draining) != 1 || len(d.Stopped) != 0 || d.Pins["counter"]["7"] != m2 {
		t.Fatalf("followed %+v", d)
	}
	out := logs.String()
	if got := strings.Count(out, "ignored an operator directive"); got != 5 {
		t.Errorf("%d ignored directives logged, want 5:\n%s", got, out)
	}
	if !strings.Contains(out, intruder.id.String()) || !strings.Contains(out, "following an operator directive") {
		t.Errorf("the log does not name the intruder or what is followed:\n%s", out)
	}
	// A second read logs nothing new.
	logs.Reset()
	n.followedDirectives(recs)
	if logs.Len() != 0 {
		t.Errorf("a second read logged again:\n%s", logs.String())
	}

	// An admin's earlier request stored again over its later one (a replay by a member) is
	// ignored: the later one stays in force.
	resume := directiveRecord(t, &admin2, DirectiveChange{Kind: directivePause, Undo: true}, t0.Add(time.Second))
	pause := directiveRecord(t, &admin2, DirectiveChange{Kind: directivePause}, t0)
	if resume.Key != pause.Key {
		t.Fatal("one signer's records of a directive share a key")
	}
	logs.Reset()
	if d := n.followedDirectives([]remember.Record{pause}); d.RebalancePaused {
		t.Errorf("a replayed pause is followed")
	}
	if !strings.Contains(logs.String(), "replayed") {
		t.Errorf("the replay is not logged:\n%s", logs.String())
	}

	// A member without admins follows unsigned directives and an earlier release's.
	open, _ := directivesNode(t, nil)
	d = open.followedDirectives(recs)
	if !d.Stopped["register"] || !d.Stopped["legacy"] || !d.Stopped["counter"] {
		t.Errorf("a member without admins follows %+v", d)
	}
}
