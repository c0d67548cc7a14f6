package e2e

import (
	"strings"
	"testing"
	"time"
)

type handoffsOut struct {
	Handoffs []struct {
		Type          string   `json:"type"`
		Shard         string   `json:"shard"`
		Phase         string   `json:"phase"`
		Cause         string   `json:"cause"`
		Stragglers    []string `json:"stragglers"`
		ForceStopInMs int64    `json:"force_stop_in_ms"`
	} `json:"handoffs"`
	Complete bool `json:"complete"`
}

type historyOut []struct {
	Shard, From, To, Cause, Type string
	Entities                     uint32 `json:"entities"`
}

// TestHandoffProgressAndHistory: a handoff held up by an entity that ignores its stop
// message shows in `shardctl handoffs` with that entity and its phase until handoff-timeout
// stops it by force (watch shows that); the history records the operator move, and the
// shards of a member killed with kill -9 as moved because it was downed.
func TestHandoffProgressAndHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("long: three daemons, a forced stop and kill -9")
	}
	keys := t.TempDir()
	adminKey, adminID := keygenAdmin(t, keys, "admin.key")
	flags := append(adminFlags(adminID), "--set", "sharding.handoff-timeout=8s")
	flags[1] = "counter,stubborn" // instead of adminFlags' types
	c := newCluster(t, flags...)
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	m2, m3 := ds[1], ds[2]
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	cl := client(t, m1)
	if _, err := cl.Ask(t.Context(), "stubborn", "mule", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	loc := decode[struct {
		Shard string `json:"shard"`
		Home  string `json:"home"`
	}](t, ctlAll([]string{"locate", "--data-dir", m1.dir, "stubborn", "mule", "--json"})[0])
	target := m2.peerID()
	if loc.Home == target {
		target = m3.peerID()
	}
	watch := startCtl(t, "watch", "--data-dir", m1.dir, "--type", "stubborn", "--json")
	if !waitFor(5*time.Second, func() bool { return strings.Contains(watch.err.String(), "watching") }) {
		t.Fatalf("watch did not start:\n%s", watch.err.String())
	}
	if r := ctlAll([]string{"shard", "move", "--data-dir", m1.dir, "--identity", adminKey, "--no-wait", "stubborn", loc.Shard, target})[0]; r.code != 0 {
		t.Fatalf("shard move:\n%v", r)
	}
	var seen handoffsOut
	if !waitFor(5*time.Second, func() bool {
		r := ctlAll([]string{"handoffs", "--data-dir", m2.dir, "--json"})[0]
		seen = decode[handoffsOut](t, r)
		return len(seen.Handoffs) == 1 && seen.Handoffs[0].Phase == "stopping-entities"
	}) {
		t.Fatalf("handoffs never showed the stopping phase: %+v", seen)
	}
	h := seen.Handoffs[0]
	if h.Shard != loc.Shard || h.Cause != "operator-move" || len(h.Stragglers) != 1 || h.Stragglers[0] != "mule" || h.ForceStopInMs <= 0 || !seen.Complete {
		t.Fatalf("handoff of %s: %+v", loc.Shard, seen)
	}
	human := ctlAll([]string{"handoffs", "--data-dir", m3.dir})[0]
	if !strings.Contains(human.out, "entities mule (forced stop in") || !strings.Contains(human.out, "stopping-entities") {
		t.Errorf("human handoffs do not name the straggler:\n%v", human)
	}
	// handoff-timeout 8 s: forced after max(8 s − 5 s, 1 s).
	if !waitFor(10*time.Second, func() bool {
		return strings.Contains(watch.out.String(), `"kind":"entity-force-stopped"`) && strings.Contains(watch.out.String(), `"entity":"mule"`)
	}) {
		t.Fatalf("watch did not show the forced stop:\n%s", watch.out.String())
	}
	if !waitFor(5*time.Second, func() bool {
		return len(decode[handoffsOut](t, ctlAll([]string{"handoffs", "--data-dir", m1.dir, "--json"})[0]).Handoffs) == 0
	}) {
		t.Fatal("the handoff did not finish after the forced stop")
	}
	moved := false
	if !waitFor(5*time.Second, func() bool {
		for _, r := range decode[historyOut](t, ctlAll([]string{"history", "--data-dir", m1.dir, "--type", "stubborn", "--shard", loc.Shard, "--json"})[0]) {
			if r.Cause == "operator-move" && r.From == loc.Home && r.To == target && r.Entities == 1 {
				moved = true
			}
		}
		return moved
	}) {
		t.Fatalf("history has no operator move of %s:\n%v", loc.Shard, ctlAll([]string{"history", "--data-dir", m1.dir, "--type", "stubborn"})[0])
	}

	// kill -9 a member that hosts counter shards, and down it: once it is removed, the next
	// message allocates its shards elsewhere, recorded as member-downed.
	if _, errs := askAll(cl, ids(60), "inc"); len(errs) > 0 {
		t.Fatalf("asks: %v", errs)
	}
	victim := m3
	lost := onNode(statsHomes(t, m1), victim.peerID())
	if len(lost) == 0 {
		t.Fatal("m3 hosts no counter shard")
	}
	victim.kill()
	if !waitFor(10*time.Second, func() bool { v, ok := m1.members(); return ok && !v.reachable(victim.peerID()) }) {
		t.Fatal("the killed member did not become unreachable")
	}
	if r := ctlAll([]string{"down", "--data-dir", m1.dir, "--identity", adminKey, "--yes", victim.peerID()})[0]; r.code != 0 {
		t.Fatalf("down:\n%v", r)
	}
	if !waitFor(20*time.Second, func() bool {
		v, ok := m1.members()
		s := v.status(victim.peerID())
		return ok && (s == "Removed" || s == "")
	}) {
		t.Fatal("the killed member was not removed")
	}
	if _, errs := askAll(cl, ids(60), "get"); len(errs) > 0 {
		t.Fatalf("asks after the kill: %v", errs)
	}
	var downed map[string]bool
	if !waitFor(5*time.Second, func() bool {
		downed = map[string]bool{}
		for _, r := range decode[historyOut](t, ctlAll([]string{"history", "--data-dir", m1.dir, "--type", "counter", "--json"})[0]) {
			if r.Cause == "member-downed" && r.From == victim.peerID() {
				downed[r.Shard] = true
			}
		}
		return len(downed) == len(lost)
	}) {
		t.Fatalf("history: %d shards recorded as moved for member-downed, %d were on the killed member:\n%v", len(downed), len(lost),
			ctlAll([]string{"history", "--data-dir", m1.dir, "--type", "counter"})[0])
	}
}
