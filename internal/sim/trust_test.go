package sim

import (
	"encoding/binary"
	"maps"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/trust"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// trustCluster is three members with an entity type (and so their stores), converged; with
// policy, every member trusts it (node.CoreConfig.Trust).
func trustCluster(t *testing.T, policy *trust.Policy) *Sim {
	t.Helper()
	s := New(Options{Seed: 1, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{testType("counter", 1)}, Trust: policy})
	for range 3 {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	s.Start(2, 1)
	s.Start(3, 1)
	if !s.RunUntil(s.Converged, 5*time.Second) {
		t.Fatalf("not converged:\n%s", s.Status())
	}
	s.RunFor(time.Second) // the directives read, the coordinator recovered
	return s
}

// TestStrangerFramesChangeNothing: frames of a peer that is not a member — a replica write,
// a gossip that lists itself Up, a region registration with the coordinator, a message
// forwarded to an entity — are refused
// where they would take effect (the store's machine, the core), after waiting
// trust.AdmitGrace for their sender to be admitted, and change nothing.
func TestStrangerFramesChangeNothing(t *testing.T) {
	s := trustCluster(t, nil)
	const stranger = membership.NodeID("n99")
	target := s.Node(1)
	key := datadir.Key(datadir.FamilyState, "counter", "forged")
	before := maps.Clone(s.Refused) // heartbeats a member got before it joined, among others

	write := wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: 7, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{
		Records: []*pb.ReplicaRecord{{Key: []byte(key), Value: []byte("forged"), Epoch: 1, Counter: 1 << 40, Writer: string(stranger)}}}}})
	target.store.receive(stranger, write)
	gossip := wire.AppendMembership(nil, membership.Gossip{From: stranger, State: membership.State{Members: []membership.Member{
		{Node: stranger, Incarnation: 1, Status: membership.Up, UpNumber: 1}}}})
	register := wire.AppendCoord(nil, "counter", coordinator.Register{Incarnation: 1})
	forwarded := wire.AppendDeliver(nil, &wire.Deliver{Type: []byte("counter"), Shard: []byte("0"), Entity: []byte("forged"),
		Payload: binary.BigEndian.AppendUint64(nil, 1<<62)})
	for _, f := range []struct {
		proto string
		frame []byte
	}{{node.MemberProtocol, gossip}, {node.CoordProtocol, register}, {node.RegionProtocol, forwarded}} {
		if err := target.Core.Receive(s.now, stranger, protocol.ID(f.proto), f.frame); err != nil {
			t.Fatal(err)
		}
	}
	s.flush(target)
	s.RunFor(trust.AdmitGrace + time.Second)

	for _, proto := range []string{"replica", node.MemberProtocol, node.CoordProtocol, node.RegionProtocol} {
		if n := s.Refused[proto] - before[proto]; n != 1 {
			t.Errorf("%d %s frames refused, want the stranger's one", n, proto)
		}
	}
	for _, r := range s.storedRecords(datadir.Prefix(datadir.FamilyState), true) {
		if r.Key == key {
			t.Errorf("the stranger's write is stored: %+v", r)
		}
	}
	for _, n := range s.Nodes() {
		if _, ok := n.M.Member(stranger); ok {
			t.Errorf("%s lists the stranger as a member", n.ID)
		}
	}
	for _, n := range s.Nodes() {
		if c := n.E.Coordinator("counter"); c != nil {
			for sh, home := range c.Allocations() {
				if home == stranger {
					t.Errorf("shard %s allocated to the stranger", sh)
				}
			}
		}
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
}

// TestDirectivesFollowedOnlyWhenAnAdminSigned: with an admin set, every member's core
// follows a directive only when one of its admins signed it. A member refuses to store one
// it would not follow itself; one stored all the same (by a member that does not check: a
// rogue) is ignored by every member; the admin's is followed everywhere.
func TestDirectivesFollowedOnlyWhenAnAdminSigned(t *testing.T) {
	adminKey, intruderKey := newSimKey(t), newSimKey(t)
	adminID, _ := peer.IDFromPrivateKey(adminKey)
	s := trustCluster(t, trust.NewPolicy(nil, []peer.ID{adminID}))
	via := s.Node(1)
	pause := node.DirectiveChange{Kind: "pause"}

	var refused error
	forged, err := node.SignDirective(pause, intruderKey, via.ID, s.now, []byte("nonce-01"))
	if err != nil {
		t.Fatal(err)
	}
	s.input(via, via.Incarnation, node.ChangeDirective{Signed: forged, Done: func(err error) { refused = err }})
	s.RunFor(time.Second)
	if refused == nil {
		t.Fatal("a member stored a directive signed by an intruder")
	}

	// A rogue member stores it all the same, as its program would.
	intruder, _ := peer.IDFromPrivateKey(intruderKey)
	via.store.call(func(m *remember.Machine) remember.CallID {
		return m.Write(s.now, []remember.Write{{Key: datadir.Key(datadir.FamilyDirective, intruder.String(), "pause"), Value: forged}})
	}, func(a remember.Answer) {
		if a.Err != nil {
			t.Errorf("the rogue write: %v", a.Err)
		}
	})
	s.RunFor(10 * time.Second)
	for _, n := range s.Nodes() {
		if d, ok := n.E.Directives(); !ok || d.RebalancePaused {
			t.Errorf("%s follows the intruder's pause (read %v)", n.ID, ok)
		}
	}

	s.changeDirective(via, pause, adminKey)
	s.RunFor(10 * time.Second)
	for _, n := range s.Nodes() {
		if d, _ := n.E.Directives(); !d.RebalancePaused {
			t.Errorf("%s does not follow the admin's pause", n.ID)
		}
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
}

func newSimKey(t *testing.T) crypto.PrivKey {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEarlyFramesWaitForAdmission: what a member admitted a moment ago sends to a member
// that has not heard of it yet waits there, and is taken — not refused — once the gossip
// that admits it arrives.
func TestEarlyFramesWaitForAdmission(t *testing.T) {
	s := trustCluster(t, nil)
	before := maps.Clone(s.Refused)
	n4 := s.AddNode(nil, "1")
	s.Start(n4.Index, 1)
	other := s.Node(2)
	if _, ok := other.M.Member(n4.ID); ok {
		t.Fatal("n02 knows the new member before it was admitted")
	}
	frame := wire.AppendCoord(nil, "counter", coordinator.GetShardHome{Shard: "1"})
	if err := other.Core.Receive(s.now, n4.ID, node.CoordProtocol, frame); err != nil {
		t.Fatal(err)
	}
	s.flush(other)
	if n := len(other.Core.Waiting()); n != 1 {
		t.Fatalf("%d inputs wait at n02, want the new member's frame", n)
	}
	if !s.RunUntil(func() bool { _, ok := other.M.Member(n4.ID); return ok }, trust.AdmitGrace) {
		t.Fatal("n02 did not hear of the new member within the grace")
	}
	if n := len(other.Core.Waiting()); n != 0 || s.Refused[node.CoordProtocol] != before[node.CoordProtocol] {
		t.Fatalf("once the member is admitted: %d inputs wait, refused %v", n, s.Refused)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
}
