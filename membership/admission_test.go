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
