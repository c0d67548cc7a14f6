package sim

import (
	"encoding/binary"
	"fmt"
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
	"github.com/shardmesh/shardmesh/shard"
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
	startThree(s)
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

// TestStrangerBouncesChangeNothing: what issue 24 added to forwarded messages — the epoch of
// the home they are sent to, a member's "not the home" bounce naming another home, a trace
// context — takes effect only from an admitted member. A stranger's bounce, which would make
// a region drop its home of a shard for the one the bounce names, and a traced message for
// the home's epoch, both wait trust.AdmitGrace and are refused; the region's home stays.
func TestStrangerBouncesChangeNothing(t *testing.T) {
	s := trustCluster(t, nil)
	const stranger = membership.NodeID("n99")
	for i := range 20 {
		s.Send(1+i%3, "counter", shard.EntityID(fmt.Sprintf("e%d", i)))
	}
	s.RunFor(2 * time.Second)
	target := s.Node(1)
	var (
		sh    shard.ID
		home  membership.NodeID
		epoch coordinator.Epoch
	)
	for _, n := range s.Nodes() {
		c := n.E.Coordinator("counter")
		if c == nil {
			continue
		}
		for id := range c.Allocations() {
			if h, ep, ok := target.E.Region("counter").Home(id); ok && h != target.ID {
				sh, home, epoch = id, h, ep
			}
		}
	}
	if sh == "" {
		t.Fatalf("n01 knows no home of a shard elsewhere:\n%s", s.Status())
	}
	before := maps.Clone(s.Refused)
	payload := func() []byte { return binary.BigEndian.AppendUint64(nil, uint64(s.traffic.newMessage())) }
	bounce := wire.AppendDeliver(nil, &wire.Deliver{Type: []byte("counter"), Shard: []byte(sh), Entity: []byte("forged"), Payload: payload(),
		Epoch: uint64(epoch), NotHome: true, Home: []byte(stranger), HomeEpoch: uint64(epoch) + 100})
	traced := wire.AppendDeliver(nil, &wire.Deliver{Type: []byte("counter"), Shard: []byte(sh), Entity: []byte("forged"), Payload: payload(),
		Epoch: uint64(epoch), Trace: make([]byte, 25)})
	for _, f := range [][]byte{bounce, traced} {
		if err := target.Core.Receive(s.now, stranger, node.RegionProtocol, f); err != nil {
			t.Fatal(err)
		}
	}
	s.flush(target)
	if n := len(target.Core.Waiting()); n != 2 {
		t.Fatalf("%d inputs wait at n01, want the stranger's two", n)
	}
	s.RunFor(trust.AdmitGrace + time.Second)
	if n := s.Refused[node.RegionProtocol] - before[node.RegionProtocol]; n != 2 {
		t.Errorf("%d region frames refused, want the stranger's two", n)
	}
	if h, ep, ok := target.E.Region("counter").Home(sh); !ok || h != home || ep != epoch {
		t.Errorf("n01's home of shard %s is %s %s (%v), was %s %s", sh, h, ep, ok, home, epoch)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
}
