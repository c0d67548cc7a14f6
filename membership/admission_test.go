package membership

import (
	"strings"
	"testing"
	"time"
)

// exchange delivers every message of each machine's Ready to its addressee among nodes,
// until none is left.
func exchange(t *testing.T, now time.Time, nodes ...*Node) {
	t.Helper()
	by := map[NodeID]*Node{}
	for _, n := range nodes {
		by[n.ID()] = n
	}
	for round := 0; round < 100; round++ {
		sent := false
		for _, n := range nodes {
			for _, env := range n.Ready().Messages {
				if to := by[env.To]; to != nil {
					to.Step(now, n.ID(), env.Msg)
					sent = true
				}
			}
		}
		if !sent {
			return
		}
	}
	t.Fatal("the machines did not settle")
}

// admitting returns an Admit that admits only the members presenting credential "ok-" +
// their id.
func admitting() func(time.Time, NodeID, []byte) string {
	return func(_ time.Time, node NodeID, credential []byte) string {
		if string(credential) != "ok-"+string(node) {
			return "no credential for " + string(node)
		}
		return ""
	}
}

// TestAdmission: with Admit, a member joins only with a credential the member it asks
// accepts; the refusal says why; a member without one cannot admit anybody either.
func TestAdmission(t *testing.T) {
	now := time.Unix(1000, 0)
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	newMember := func(id NodeID, credential string) *Node {
		c := cfg
		c.Admit, c.Credential = admitting(), []byte(credential)
		return New(c, Member{Node: id, Incarnation: 1}, now)
	}
	seed := newMember("a", "ok-a")
	seed.FormCluster(now)
	seed.Ready()

	good := newMember("b", "ok-b")
	good.JoinVia(now, "a")
	exchange(t, now, seed, good)
	if !good.Joined() {
		t.Fatal("a member with a credential was not admitted")
	}

	rogue := newMember("r", "forged")
	rogue.JoinVia(now, "a")
	exchange(t, now, seed, rogue)
	stop := rogue.StoppedReason()
	if rogue.Joined() || stop == nil || stop.Reason != StopJoinRefused || !strings.Contains(stop.Detail, "not admitted: no credential for r") {
		t.Fatalf("the member without a credential: joined %v, stopped %+v", rogue.Joined(), stop)
	}
	if _, ok := seed.Member("r"); ok {
		t.Fatal("the refused member is in the seed's view")
	}

	// A joining member ignores the answer of a member that is not admitted itself.
	impostor := New(cfg, Member{Node: "i", Incarnation: 1}, now) // admits anyone, holds no credential
	impostor.FormCluster(now)
	impostor.Ready()
	victim := newMember("v", "ok-v")
	victim.JoinVia(now, "i")
	exchange(t, now, impostor, victim)
	if victim.Joined() || victim.StoppedReason() != nil {
		t.Fatalf("joined a cluster through a member without a credential: joined %v, stopped %+v", victim.Joined(), victim.StoppedReason())
	}
}

// TestRejoinWhenTheAdmitterStops: a member admitted by a member that stops before it told
// anyone else is not known to the others, whose gossip does not merge its own; while it is
// Joining it asks an Up member to admit it every seed-node-timeout, and so becomes known.
func TestRejoinWhenTheAdmitterStops(t *testing.T) {
	now := time.Unix(1000, 0)
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a := New(cfg, Member{Node: "a", Incarnation: 1}, now)
	a.FormCluster(now)
	a.Ready()
	c := New(cfg, Member{Node: "c", Incarnation: 1}, now)
	c.JoinVia(now, "a")
	exchange(t, now, a, c)
	for i := 0; i < 50 && (a.Self().Status != Up || statusOf(c, "c") != Up); i++ {
		now = now.Add(100 * time.Millisecond)
		a.Tick(now)
		c.Tick(now)
		exchange(t, now, a, c)
	}
	if statusOf(a, "c") != Up {
		t.Fatalf("c is %v at a", statusOf(a, "c"))
	}

	// b joins through a, which stops before its gossip reaches c.
	b := New(cfg, Member{Node: "b", Incarnation: 1}, now)
	b.JoinVia(now, "a")
	exchange(t, now, a, b)
	if !b.Joined() {
		t.Fatal("b did not join")
	}
	if _, ok := c.Member("b"); ok {
		t.Fatal("c knows b before anyone told it")
	}
	sent := false
	for range 60 { // 6 s
		now = now.Add(100 * time.Millisecond)
		b.Tick(now)
		for _, env := range b.Ready().Messages {
			if _, ok := env.Msg.(JoinRequest); ok && env.To == "c" {
				sent = true
				c.Step(now, "b", env.Msg)
			}
		}
	}
	if !sent {
		t.Fatal("b, Joining and known only to a stopped member, did not ask c to admit it")
	}
	if st := statusOf(c, "b"); st != Joining {
		t.Fatalf("b is %v at c, want Joining", st)
	}
}

func statusOf(n *Node, id NodeID) Status {
	st, ok := n.Status(id)
	if !ok {
		return Removed + 1
	}
	return st
}
