package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

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

func newIdentity(t testing.TB) testIdentity {
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
	var key crypto.PrivKey
	sd := signedDirective{change: c, signer: unsignedSigner}
	if signer != nil {
		key, sd.signer = signer.key, signer.id.String()
	}
	raw, err := SignDirective(c, key, "", issued, nil)
	if err != nil {
		t.Fatal(err)
	}
	return remember.Record{Key: sd.key(), Value: raw}
}

// directivesReader is what a member with policy reads its directives with, logging to the
// buffer returned.
func directivesReader(policy *trust.Policy) (*directiveReader, *bytes.Buffer) {
	var logs bytes.Buffer
	return &directiveReader{policy: policy, log: slog.New(slog.NewTextHandler(&logs, nil))}, &logs
}

// TestFollowedDirectives: a member follows, per directive, the latest record signed by one
// of its admins, a set or an undo; records by others, unsigned ones and ones moved to
// another key change nothing and are logged once.
func TestFollowedDirectives(t *testing.T) {
	admin1, admin2, intruder := newIdentity(t), newIdentity(t), newIdentity(t)
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	n, logs := directivesReader(trust.NewPolicy(nil, []peer.ID{admin1.id, admin2.id}))
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
	ignored := 0
	n.ignored = func() { ignored++ }
	d := n.read(recs)
	if d.RebalancePaused || !d.Draining[m2] || len(d.Draining) != 1 || len(d.Stopped) != 0 || d.Pins["counter"]["7"] != m2 {
		t.Fatalf("followed %+v", d)
	}
	out := logs.String()
	if got := strings.Count(out, "ignored an operator directive"); got != 5 || ignored != 5 {
		t.Errorf("%d ignored directives logged and %d counted, want 5:\n%s", got, ignored, out)
	}
	if !strings.Contains(out, intruder.id.String()) || !strings.Contains(out, "following an operator directive") {
		t.Errorf("the log does not name the intruder or what is followed:\n%s", out)
	}
	// A second read logs nothing new.
	logs.Reset()
	n.read(recs)
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
	if d := n.read([]remember.Record{pause}); d.RebalancePaused {
		t.Errorf("a replayed pause is followed")
	}
	if !strings.Contains(logs.String(), "replayed") {
		t.Errorf("the replay is not logged:\n%s", logs.String())
	}

	// A member without admins follows unsigned directives and an earlier release's.
	open, _ := directivesReader(nil)
	d = open.read(recs)
	if !d.Stopped["register"] || !d.Stopped["legacy"] || !d.Stopped["counter"] {
		t.Errorf("a member without admins follows %+v", d)
	}
}

// TestDirectivesOutliveAProtocolVersion: a directive stays in the store across upgrades: one
// signed under another protocol version than this build's is followed all the same.
func TestDirectivesOutliveAProtocolVersion(t *testing.T) {
	admin := newIdentity(t)
	body, err := proto.Marshal(&adminpb.Request{ProtocolVersion: 99, IssuedAtUnixMs: 1, Nonce: []byte("12345678"),
		Call: &adminpb.Request_Directive{Directive: &adminpb.DirectiveRequest{Kind: directivePause}}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := trust.Sign(admin.key, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, logs := directivesReader(trust.NewPolicy(nil, []peer.ID{admin.id}))
	key := datadir.Key(datadir.FamilyDirective, admin.id.String(), directivePause)
	if d := r.read([]remember.Record{{Key: key, Value: raw}}); !d.RebalancePaused {
		t.Fatalf("a directive of another protocol version is not followed:\n%s", logs)
	}
}

// FuzzReadDirectives: stored directive records of any bytes, under any key, are followed or
// ignored, never a panic.
func FuzzReadDirectives(f *testing.F) {
	id := newIdentity(f)
	raw, _ := SignDirective(DirectiveChange{Kind: directiveStop, Type: "counter"}, id.key, "m", time.Unix(1, 0), nil)
	f.Add(datadir.Key(datadir.FamilyDirective, id.id.String(), directiveStop, "counter"), raw)
	f.Add(datadir.Key(datadir.FamilyDirective, directivePin, "counter"), []byte("m"))
	f.Fuzz(func(_ *testing.T, key string, value []byte) {
		for _, policy := range []*trust.Policy{nil, trust.NewPolicy(nil, []peer.ID{id.id})} {
			r, _ := directivesReader(policy)
			r.read([]remember.Record{{Key: datadir.Prefix(datadir.FamilyDirective) + key, Value: value}})
		}
	})
}
