package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/multiformats/go-multiaddr"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// keygenCluster makes a cluster key file in dir.
func keygenCluster(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "cluster.key")
	if out, errOut, code := shardctl("keygen", "--out", path); code != 0 {
		t.Fatalf("keygen: exit %d %s %s", code, out, errOut)
	}
	return path
}

// keygenAuthority makes a cluster authority in dir and returns its key file and its id.
func keygenAuthority(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	path := filepath.Join(dir, name)
	out, errOut, code := shardctl("keygen", "authority", "--out", path, "--json")
	var k struct {
		File      string `json:"file"`
		Authority string `json:"authority"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &k) != nil || k.Authority == "" {
		t.Fatalf("keygen authority: exit %d %s %s", code, out, errOut)
	}
	return path, k.Authority
}

// credentialMember issues a member credential, signed by the authority in authorityKey,
// for the data directory of daemon name (making its identity if it has none yet).
func (c *cluster) credentialMember(name, authorityKey string) {
	c.t.Helper()
	if out, errOut, code := shardctl("credential", "member", "--authority", authorityKey, "--data-dir", filepath.Join(c.root, name)); code != 0 {
		c.t.Fatalf("credential member %s: exit %d %s %s", name, code, out, errOut)
	}
}

// peerIDOf returns the peer id of the identity in data directory dir.
func peerIDOf(t *testing.T, dir string) string {
	t.Helper()
	key, err := p2p.LoadIdentity(filepath.Join(dir, datadir.IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

// askCounters sends msg to every counter in ids through shardctl ask on d, all at once,
// and fails the test unless every ask succeeds; it returns the replies.
func askCounters(t *testing.T, d *daemon, ids []string, msg string) map[string]string {
	t.Helper()
	args := make([][]string, len(ids))
	for i, id := range ids {
		args[i] = d.ctl("ask", "counter", id, msg)
	}
	out := map[string]string{}
	for i, r := range ctlAll(args...) {
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		out[ids[i]] = strings.TrimSpace(r.out)
	}
	return out
}

// sameValues fails the test where after differs from before.
func sameValues(t *testing.T, before, after map[string]string) {
	t.Helper()
	for id, v := range before {
		if after[id] != v {
			t.Errorf("%s reads %q, was %q: data changed", id, after[id], v)
		}
	}
}

// noDirectives fails the test unless d follows no operator directive.
func noDirectives(t *testing.T, d *daemon) {
	t.Helper()
	dir := decode[directivesOut](t, ctlAll(d.ctl("rebalance", "status", "--json"))[0])
	if dir.RebalancePaused || len(dir.Draining)+len(dir.StoppedTypes)+len(dir.Pins) != 0 {
		t.Errorf("%s follows directives nobody allowed: %+v", d.name, dir)
	}
}

// TestAdmissionKeepsOutAKeyHolder: with a cluster authority, holding the cluster key is not
// enough to become a member. A daemon started by someone holding only the key (with its own
// --admin-allow) is refused at join and exits 2; the members log the refusal with its peer
// id; a member credential from another authority is refused too; a client with the key
// reads the members but changes nothing; a member with a credential of the cluster's
// authority joins.
func TestAdmissionKeepsOutAKeyHolder(t *testing.T) {
	keys := t.TempDir()
	key := keygenCluster(t, keys)
	authKey, authID := keygenAuthority(t, keys, "authority.key")
	otherAuthKey, _ := keygenAuthority(t, keys, "other-authority.key")
	_, adminID := keygenAdmin(t, keys, "admin.key")
	intruderKey, intruderID := keygenAdmin(t, keys, "intruder.key")
	c := newCluster(t, append(adminFlags(adminID), "--cluster-key", key, "--cluster-authority", authID)...)
	for _, name := range []string{"m1", "m2", "m3", "m4"} {
		c.credentialMember(name, authKey)
	}
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	counters := ids(30)
	askCounters(t, m1, counters, "inc")
	before := askCounters(t, m1, counters, "get")

	// Daemons of someone holding the cluster key: no credential, and one from another
	// authority. Both are refused at join and exit 2.
	attacker := newCluster(t, append(adminFlags(intruderID), "--cluster-key", key)...)
	attacker.credentialMember("foreign", otherAuthKey)
	for _, name := range []string{"rogue", "foreign"} {
		d := attacker.spawn(name, "--join", m1.addr())
		if code, ok := d.wait(30 * time.Second); !ok || code != 2 {
			t.Fatalf("%s: exited=%v code=%d, want exit 2 (join refused):\n%s", name, ok, code, d.log.String())
		}
		if !strings.Contains(d.log.String(), "member credential") {
			t.Errorf("%s's log does not say what it lacks:\n%s", name, d.log.String())
		}
		id := peerIDOf(t, d.dir)
		if !waitFor(5*time.Second, func() bool {
			return strings.Contains(m1.log.String(), "join refused") && strings.Contains(m1.log.String(), id)
		}) {
			t.Errorf("m1 did not log the refused join of %s with its peer id %s:\n%s", name, id, m1.log.String())
		}
	}

	// A client with the cluster key reads, and is refused everything that changes the cluster.
	rs := ctlAll(
		m1.ctl("members", "--json"),
		m1.ctl("--identity", intruderKey, "rebalance", "pause"),
		m1.ctl("--identity", intruderKey, "drain", ds[1].peerID()),
		m1.ctl("--identity", intruderKey, "types", "stop", "counter"),
	)
	if rs[0].code != 0 || decode[membersView](t, rs[0]).count("Up") != 3 {
		t.Fatalf("a key holder cannot read the members:\n%v", rs[0])
	}
	for _, r := range rs[1:] {
		if r.code != 4 {
			t.Errorf("want exit 4:\n%v", r)
		}
	}

	// A member with a credential of the cluster's authority joins.
	ds = append(ds, c.start("m4", "--join", m1.addr()))
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 4) }) {
		t.Fatal("the member with a credential did not join")
	}
	for _, d := range ds {
		noDirectives(t, d)
	}
	sameValues(t, before, askCounters(t, ds[3], counters, "get"))
	if h := ctlAll(m1.ctl("health", "--json"))[0]; h.code != 0 || strings.Contains(h.out, "any key holder") {
		t.Errorf("health (the cluster has an authority):\n%v", h)
	}
}

// TestOpenAdmissionWarns: the README's cluster with nothing but a cluster key works, and
// every member warns at start, and shardctl health says, that any key holder can join.
func TestOpenAdmissionWarns(t *testing.T) {
	key := keygenCluster(t, t.TempDir())
	c := newCluster(t, "--cluster-key", key, "--entity-types", "counter")
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr())}
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 2) }) {
		t.Fatal("cluster did not form")
	}
	askCounters(t, m1, []string{"u1"}, "inc")
	for _, d := range ds {
		if log := d.log.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "any key holder can join as a member") {
			t.Errorf("%s does not warn of open admission:\n%s", d.name, log)
		}
	}
	h := ctlAll(m1.ctl("health"))[0]
	if h.code != 0 || !strings.Contains(h.out, "any key holder can join as a member") {
		t.Errorf("health does not say that admission is open:\n%v", h)
	}
}

// TestRogueMemberChangesNothing is the attack of issue 17: three members with an admin set
// and no authority (the README's cluster), and someone holding only the cluster key starts
// a member of their own with --admin-allow of their own identity, joins, and through it
// pauses rebalancing, drains a member, stops the counter type and removes its data. The
// members check every signed request against their own admin set: nothing changes on them,
// no data is removed, they log what they ignored with the caller's identity, and shardctl
// audit lists the rogue's calls as not verified.
func TestRogueMemberChangesNothing(t *testing.T) {
	keys := t.TempDir()
	key := keygenCluster(t, keys)
	_, adminID := keygenAdmin(t, keys, "admin.key")
	intruderKey, intruderID := keygenAdmin(t, keys, "intruder.key")
	// The entity types run on members with role backend: the rogue, without it, only routes.
	c := newCluster(t, append(adminFlags(adminID), "--cluster-key", key, "--set", "sharding.rebalance-interval=1s",
		"--set", "sharding.role=backend", "--roles", "backend")...)
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	m2 := ds[1]
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	counters := ids(60)
	askCounters(t, m1, counters, "inc")
	before := askCounters(t, m1, counters, "get")
	if len(onNode(statsHomes(t, m1), m2.peerID())) == 0 {
		t.Fatal("m2 hosts no counter shard: nothing to drain")
	}

	// The rogue joins (no authority: any key holder can) with its own admin set. Without the
	// role backend it hosts no shard (it routes), so the counter's shards stay on the real
	// members, whatever it does to itself.
	rogue := newCluster(t, append(adminFlags(intruderID), "--cluster-key", key, "--set", "sharding.rebalance-interval=1s",
		"--set", "sharding.role=backend")...).start("rogue", "--join", m1.addr())
	all := []*daemon{m1, m2, ds[2], rogue}
	if !waitFor(15*time.Second, func() bool { return allAgree(all, 4) }) {
		t.Fatal("the rogue did not join")
	}
	via := func(args ...string) []string {
		return rogue.ctl(append([]string{"--identity", intruderKey}, args...)...)
	}
	// Stored by the rogue, which follows its own admin; followed by no real member: shardctl
	// says so (exit 3, naming them).
	for _, r := range ctlAll(via("rebalance", "pause"), via("drain", m2.peerID()), via("types", "stop", "counter")) {
		if r.code != 3 || !strings.Contains(r.err, "not followed") || !strings.Contains(r.err, m1.peerID()) || !strings.Contains(r.err, m2.peerID()) {
			t.Errorf("through the rogue, want exit 3 naming the members that do not follow:\n%v", r)
		}
	}
	// Each member reads the directives the rogue stored and ignores them, naming the
	// intruder: from then on the coordinator (on m1) has seen them.
	for _, d := range ds {
		if !waitFor(20*time.Second, func() bool { return strings.Count(d.log.String(), "ignored an operator directive") >= 3 }) {
			t.Fatalf("%s did not log the ignored directives:\n%s", d.name, d.log.String())
		}
		if !strings.Contains(d.log.String(), intruderID) {
			t.Errorf("%s did not name the intruder in its log", d.name)
		}
	}
	if r := ctlAll(via("data", "remove", "--include-state", "--yes", "counter"))[0]; r.code != 4 {
		t.Errorf("data remove through the rogue: want exit 4 (the members refuse):\n%v", r)
	}
	for _, d := range ds {
		noDirectives(t, d)
	}
	if len(onNode(statsHomes(t, m1), m2.peerID())) == 0 {
		t.Errorf("m2 was drained by the rogue's directive")
	}
	sameValues(t, before, askCounters(t, m2, counters, "get"))

	// The audit lists the rogue's calls: the intruder as caller, the rogue as the member
	// that took them, not verified by the member asked.
	a := ctlAll(m1.ctl("audit", "--json"))[0]
	if a.code != 0 {
		t.Fatalf("%v", a)
	}
	seen := map[string]bool{}
	for _, rec := range decode[[]struct {
		Caller   string `json:"caller"`
		Call     string `json:"call"`
		Member   string `json:"member"`
		Verified bool   `json:"verified"`
	}](t, a) {
		if rec.Caller == intruderID {
			seen[rec.Call] = true
			if rec.Verified || rec.Member != rogue.peerID() {
				t.Errorf("audit record of the intruder's call: %+v", rec)
			}
		}
	}
	for _, call := range []string{"rebalance-pause", "drain", "types-stop"} {
		if !seen[call] {
			t.Errorf("the audit does not list the intruder's %s:\n%s", call, a.out)
		}
	}
}

// TestForgedMemberFramesAreRefused: a peer that holds the cluster key but is not a member
// sends what members send each other: replica writes and repairs that delete the counters'
// state, a gossip message marking a member Down, a message to an entity. Every frame is
// refused, counted and logged with the peer id and address, and nothing changes.
func TestForgedMemberFramesAreRefused(t *testing.T) {
	key := keygenCluster(t, t.TempDir())
	c := newCluster(t, "--cluster-key", key, "--entity-types", "counter", "--metrics-listen", "127.0.0.1:0")
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	m2 := ds[1]
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	counters := ids(10)
	askCounters(t, m1, counters, "inc")
	before := askCounters(t, m1, counters, "get")

	psk, err := p2p.LoadClusterKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	identity, _, _ := crypto.GenerateEd25519Key(nil)
	forger, err := p2p.New(ctx, p2p.Config{Identity: identity, ClusterKey: psk})
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	forgerID := forger.ID().String()

	// The membership as the members know it, with m2 marked Down.
	view := decode[struct {
		Members []struct {
			Node        string   `json:"node"`
			Incarnation uint64   `json:"incarnation"`
			Addrs       []string `json:"addrs"`
			UpNumber    uint64   `json:"up_number"`
		} `json:"members"`
	}](t, ctlAll(m1.ctl("members", "--json"))[0])
	var state membership.State
	for _, m := range view.Members {
		st := membership.Up
		if m.Node == m2.peerID() {
			st = membership.Down
		}
		state.Members = append(state.Members, membership.Member{Node: membership.NodeID(m.Node), Incarnation: m.Incarnation,
			Addrs: m.Addrs, Status: st, UpNumber: m.UpNumber})
	}
	var tombstones []*pb.ReplicaRecord
	for _, e := range counters {
		tombstones = append(tombstones, &pb.ReplicaRecord{Key: []byte(datadir.Key(datadir.FamilyState, "counter", e)),
			Epoch: 1 << 62, Counter: 1 << 62, Writer: forgerID, Deleted: true})
	}
	frames := []struct {
		proto protocol.ID
		frame []byte
	}{
		{"/shardmesh/member/1", wire.AppendMembership(nil, membership.Gossip{From: membership.NodeID(forgerID), State: state})},
		{"/shardmesh/replica/1", wire.AppendReplica(nil, &pb.ReplicaEnvelope{Msg: &pb.ReplicaEnvelope_Repair{Repair: &pb.ReplicaRecords{Records: tombstones, Last: true}}})},
		{"/shardmesh/replica/1", wire.AppendReplica(nil, &pb.ReplicaEnvelope{RequestId: 7, Msg: &pb.ReplicaEnvelope_Write{Write: &pb.ReplicaWrite{Records: tombstones}}})},
		{"/shardmesh/region/1", wire.AppendDeliver(nil, &wire.Deliver{Type: []byte("counter"), Shard: []byte("1"), Entity: []byte(counters[0]), Payload: []byte("inc")})},
	}
	for _, d := range ds {
		ma, _ := multiaddr.NewMultiaddr(d.addr())
		to, err := forger.Connect(ctx, ma)
		if err != nil {
			t.Fatalf("connect %s: %v", d.name, err)
		}
		for _, f := range frames {
			if err := forger.Send(ctx, to, f.proto, f.frame); err != nil {
				t.Fatalf("send to %s on %s: %v", d.name, f.proto, err)
			}
		}
	}

	// Every member counts and logs the refusals, naming the forger and its address.
	for _, d := range ds {
		if !waitFor(15*time.Second, func() bool {
			s := d.scrapeMetrics()
			return s.value("shardmesh_trust_frames_refused_total", "protocol", "/shardmesh/replica/1") >= 2 &&
				s.value("shardmesh_trust_frames_refused_total", "protocol", "/shardmesh/member/1") >= 1 &&
				s.value("shardmesh_trust_frames_refused_total", "protocol", "/shardmesh/region/1") >= 1
		}) {
			t.Fatalf("%s did not count the refused frames:\n%s", d.name, d.log.String())
		}
		if !waitFor(15*time.Second, func() bool {
			log := d.log.String()
			return strings.Contains(log, "refused frames from a peer that is not a member") && strings.Contains(log, forgerID) &&
				strings.Contains(log, "/ip4/127.0.0.1/")
		}) {
			t.Errorf("%s did not log the refusal with the peer id and address:\n%s", d.name, d.log.String())
		}
	}
	if !allAgree(ds, 3) {
		t.Fatal("the forged gossip changed the membership")
	}
	sameValues(t, before, askCounters(t, m1, counters, "get"))
}
