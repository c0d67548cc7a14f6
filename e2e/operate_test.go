package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/shard"
)

// statsHomes returns where each counter shard runs, from shardctl stats --json on d.
func statsHomes(t *testing.T, d *daemon) map[string]string {
	t.Helper()
	r := ctlAll(d.ctl("stats", "--type", "counter", "--json"))[0]
	st := decode[struct {
		Regions []struct {
			Node          string            `json:"node"`
			ShardEntities map[string]uint64 `json:"shard_entities"`
		} `json:"regions"`
	}](t, r)
	out := map[string]string{}
	for _, reg := range st.Regions {
		for s := range reg.ShardEntities {
			out[s] = reg.Node
		}
	}
	return out
}

func onNode(homes map[string]string, node string) []string {
	var out []string
	for s, n := range homes {
		if n == node {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

type directivesOut struct {
	Draining        []string `json:"draining"`
	RebalancePaused bool     `json:"rebalance_paused"`
	Pins            []struct {
		Type, Shard, Node string
	} `json:"pins"`
	StoppedTypes []string `json:"stopped_types"`
}

// TestOperations drives the operations of the admin protocol on three real daemons: drain
// and undrain, rebalance pause/resume and a plan that predicts the round that follows, a
// shard move that survives the coordinator's member leaving, types stop/start and data
// remove, with refusals and bad input.
func TestOperations(t *testing.T) {
	if testing.Short() {
		t.Skip("long: three daemons, handoffs and a coordinator failover")
	}
	keys := t.TempDir()
	adminKey, adminID := keygenAdmin(t, keys, "admin.key")
	intruderKey, _ := keygenAdmin(t, keys, "intruder.key")
	flags := append(adminFlags(adminID), "--set", "sharding.rebalance-interval=1s")
	flags[1] = "counter,echo,register" // register: durable state of another type, which data remove must not touch
	c := newCluster(t, flags...)
	m1 := c.start("m1")
	ds := []*daemon{m1, c.start("m2", "--join", m1.addr()), c.start("m3", "--join", m1.addr())}
	m2, m3 := ds[1], ds[2]
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	ctl := func(d *daemon, cmd ...string) []string {
		return append(cmd, "--data-dir", d.dir, "--identity", adminKey)
	}
	cl := client(t, m1)
	if _, errs := askAll(cl, ids(90), "inc"); len(errs) > 0 {
		t.Fatalf("asks failed: %v", errs)
	}

	t.Run("refused and bad input", func(t *testing.T) {
		rs := ctlAll(
			[]string{"drain", "--data-dir", m1.dir, "--identity", intruderKey, m2.peerID()},
			[]string{"shard", "move", "--data-dir", m1.dir, "--identity", intruderKey, "counter", "1", m2.peerID()},
			[]string{"types", "stop", "--data-dir", m1.dir, "--identity", intruderKey, "counter"},
			[]string{"data", "remove", "--data-dir", m1.dir, "--identity", intruderKey, "--yes", "counter"},
			ctl(m1, "data", "remove", "--yes", "counter"), // in service
		)
		for _, r := range rs {
			if r.code != 4 || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
				t.Errorf("want exit 4 and one line:\n%v", r)
			}
		}
		if !strings.Contains(rs[4].err, "in service") {
			t.Errorf("data remove of a running type does not say why:\n%v", rs[4])
		}
		rs = ctlAll(
			ctl(m1, "drain", "nosuchmember"),
			ctl(m1, "shard", "move", "nosuch", "1", m2.peerID()),
			ctl(m1, "types", "stop", "nosuch"),
			ctl(m1, "rebalance", "plan", "--if-join", "-1"),
			ctl(m1, "shard", "move", "counter", "1"),
			ctl(m1, "drain", "--timeout", "soon", m2.peerID()),
		)
		for i, r := range rs {
			if r.code != 2 || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
				t.Errorf("want exit 2 and one line:\n%v", r)
			}
			if want := []string{"nosuchmember", `"nosuch"`, `"nosuch"`, "-1", "TYPE SHARD NODE", "soon"}[i]; !strings.Contains(r.err, want) {
				t.Errorf("the error does not name %s:\n%v", want, r)
			}
		}
		if d := decode[directivesOut](t, ctlAll(ctl(m1, "rebalance", "status", "--json"))[0]); len(d.Draining)+len(d.Pins)+len(d.StoppedTypes) != 0 || d.RebalancePaused {
			t.Fatalf("refused or bad calls changed the directives: %+v", d)
		}
	})

	t.Run("drain", func(t *testing.T) {
		r := ctlAll(ctl(m1, "drain", m2.peerID()))[0]
		if r.code != 0 || !strings.Contains(r.out, "0 shards left") {
			t.Fatalf("drain:\n%v", r)
		}
		if on := onNode(statsHomes(t, m1), m2.peerID()); len(on) != 0 {
			t.Fatalf("the drained member still hosts %v", on)
		}
		if _, errs := askAll(cl, ids(90), "get"); len(errs) > 0 {
			t.Fatalf("asks failed after the drain: %v", errs)
		}
		if on := onNode(statsHomes(t, m1), m2.peerID()); len(on) != 0 {
			t.Fatalf("new allocations went to the drained member: %v", on)
		}
	})

	t.Run("plan predicts the round", func(t *testing.T) {
		if r := ctlAll(ctl(m1, "rebalance", "pause"))[0]; r.code != 0 || !strings.Contains(r.out, "PAUSED") {
			t.Fatalf("pause:\n%v", r)
		}
		if r := ctlAll(ctl(m1, "undrain", m2.peerID()))[0]; r.code != 0 {
			t.Fatalf("undrain:\n%v", r)
		}
		time.Sleep(2500 * time.Millisecond) // two rebalance intervals: nothing may move while paused
		before := statsHomes(t, m1)
		if on := onNode(before, m2.peerID()); len(on) != 0 {
			t.Fatalf("shards moved to %s while rebalancing was paused: %v", m2.name, on)
		}
		r := ctlAll(ctl(m2, "rebalance", "plan", "--type", "counter", "--json"))[0] // asked of the coordinator on m1
		plans := decode[[]struct {
			Coordinator     string `json:"coordinator"`
			RebalancePaused bool   `json:"rebalance_paused"`
			Moves           []struct {
				Shard, From, To string
				Live            uint64 `json:"live_entities"`
			} `json:"moves"`
		}](t, r)
		if len(plans) != 1 || len(plans[0].Moves) == 0 || plans[0].Coordinator != m1.peerID() || !plans[0].RebalancePaused {
			t.Fatalf("plan:\n%v", r)
		}
		var live uint64
		for _, m := range plans[0].Moves {
			live += m.Live
			if m.To != m2.peerID() || before[m.Shard] != m.From {
				t.Errorf("plan move %+v: not from where the shard is (%s) to the empty member", m, before[m.Shard])
			}
		}
		if live == 0 {
			t.Errorf("the plan counts no live entities: %+v", plans[0].Moves)
		}
		human := ctlAll(ctl(m1, "rebalance", "plan", "--type", "counter"))[0]
		if human.code != 0 || !strings.Contains(human.out, "shards would move") || !strings.Contains(human.out, "paused") {
			t.Errorf("human plan:\n%v", human)
		}
		watch := startCtl(t, "watch", "--data-dir", m1.dir, "--type", "counter", "--json")
		if !waitFor(5*time.Second, func() bool { return strings.Contains(watch.err.String(), "watching") }) {
			t.Fatalf("watch did not start:\n%s", watch.err.String())
		}
		if r := ctlAll(ctl(m1, "rebalance", "resume"))[0]; r.code != 0 || !strings.Contains(r.out, "active") {
			t.Fatalf("resume:\n%v", r)
		}
		// The first round moves exactly the planned shards to the planned member; later
		// rounds may move more.
		want := map[string]bool{}
		for _, m := range plans[0].Moves {
			want[m.Shard] = true
		}
		if !waitFor(15*time.Second, func() bool {
			homes := statsHomes(t, m1)
			for s := range want {
				if homes[s] != m2.peerID() {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("the planned shards did not all move to %s: %v", m2.name, onNode(statsHomes(t, m1), m2.peerID()))
		}
		var first []string
		for _, line := range strings.Split(strings.TrimSpace(watch.out.String()), "\n") {
			var ev struct {
				Kind   string   `json:"kind"`
				Shards []string `json:"shards"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Kind == "rebalance-round" {
				first = ev.Shards
				break
			}
		}
		slices.Sort(first)
		planned := slices.Sorted(maps.Keys(want))
		if !slices.Equal(first, planned) {
			t.Errorf("the first rebalance round moved %v, the plan said %v", first, planned)
		}
	})

	var pinned string
	t.Run("shard move survives a coordinator failover", func(t *testing.T) {
		onM1 := onNode(statsHomes(t, m1), m1.peerID())
		if len(onM1) == 0 {
			t.Fatal("m1 hosts no shard to move")
		}
		pinned = onM1[0]
		r := ctlAll(ctl(m1, "shard", "move", "counter", pinned, short(m3.peerID()), "--json"))[0]
		if r.code != 0 {
			t.Fatalf("shard move:\n%v", r)
		}
		d := decode[directivesOut](t, r)
		if len(d.Pins) != 1 || d.Pins[0].Shard != pinned || d.Pins[0].Node != m3.peerID() {
			t.Fatalf("the pin is not in the directives: %+v", d)
		}
		if homes := statsHomes(t, m1); homes[pinned] != m3.peerID() {
			t.Fatalf("shard %s is on %s after the move", pinned, homes[pinned])
		}
		// The coordinator's member leaves; the new coordinator (on m2) keeps the pin.
		if r := ctlAll(ctl(m1, "shutdown", "--timeout", "30s"))[0]; r.code != 0 {
			t.Fatalf("shutdown of the coordinator's member:\n%v", r)
		}
		if _, ok := m1.wait(10 * time.Second); !ok {
			t.Fatal("m1 did not exit")
		}
		time.Sleep(3 * time.Second) // rebalance rounds of the new coordinator
		st := decode[directivesOut](t, ctlAll(ctl(m2, "rebalance", "status", "--json"))[0])
		if len(st.Pins) != 1 || st.Pins[0].Shard != pinned {
			t.Fatalf("the pin is lost after the failover: %+v", st)
		}
		if homes := statsHomes(t, m2); homes[pinned] != m3.peerID() {
			t.Fatalf("pinned shard %s moved to %s after the failover", pinned, homes[pinned])
		}
		if r := ctlAll(ctl(m2, "shard", "unpin", "counter", pinned))[0]; r.code != 0 {
			t.Fatalf("unpin:\n%v", r)
		}
	})

	t.Run("types stop and data remove", func(t *testing.T) {
		cl2 := client(t, m2)
		for i := range 5 {
			if _, err := cl2.Ask(t.Context(), "register", fmt.Sprint("r", i), []byte(fmt.Sprint("set kept-", i))); err != nil {
				t.Fatal(err)
			}
		}
		if r := ctlAll(ctl(m2, "data", "remove", "--yes", "--shard", "3", "counter"))[0]; r.code != 4 || !strings.Contains(r.err, "in service") {
			t.Fatalf("data remove --shard of a type in service:\n%v", r)
		}
		r := ctlAll(ctl(m2, "types", "stop", "counter"))[0]
		if r.code != 0 || !strings.Contains(r.out, "0 shards still running") || !strings.Contains(r.out, "stopped types: counter") {
			t.Fatalf("types stop:\n%v", r)
		}
		start := time.Now()
		_, errs := askAll(cl2, ids(3), "get")
		if len(errs) != 3 || !strings.Contains(errs[0].Error(), "stopped by an operator") || time.Since(start) > 2*time.Second {
			t.Fatalf("asks to a stopped type did not fail fast with the reason (%v): %v", time.Since(start), errs)
		}
		if _, err := cl2.Ask(t.Context(), "echo", "e1", []byte("hi")); err != nil {
			t.Fatalf("another type stopped with it: %v", err)
		}
		dry := ctlAll(ctl(m2, "data", "remove", "--dry-run", "--include-state", "--json", "counter"))[0]
		var plan []struct {
			Records uint64 `json:"records"`
			Removed uint64 `json:"removed"`
		}
		if dry.code != 0 || json.Unmarshal([]byte(dry.out), &plan) != nil || len(plan) != 1 || plan[0].Records < 90 || plan[0].Removed != 0 {
			t.Fatalf("dry run:\n%v", dry)
		}
		// Below the type: one entity's data, then one shard's (counter-7's state is in it).
		records := func(args ...string) uint64 {
			t.Helper()
			r := ctlAll(ctl(m2, append([]string{"data", "remove", "--dry-run", "--include-state", "--json"}, append(args, "counter")...)...))[0]
			var p []struct {
				Records uint64 `json:"records"`
			}
			if r.code != 0 || json.Unmarshal([]byte(r.out), &p) != nil || len(p) != 1 {
				t.Fatalf("dry run:\n%v", r)
			}
			return p[0].Records
		}
		if r := ctlAll(ctl(m2, "data", "remove", "--yes", "--shard", "3", "--entity", "x", "counter"))[0]; r.code != 2 {
			t.Fatalf("--shard and --entity together:\n%v", r)
		}
		if r := ctlAll(ctl(m2, "data", "remove", "--yes", "--shard", "nosuch", "counter"))[0]; r.code == 0 || !strings.Contains(r.err, "not a shard") {
			t.Fatalf("--shard nosuch:\n%v", r)
		}
		all, one := records(), records("--entity", "counter-5")
		if one < 1 || one > 2 { // its state, and its remembered entity when remembered
			t.Fatalf("--entity counter-5: %d records, want its state (and its remembered entity)", one)
		}
		if r := ctlAll(ctl(m3, "data", "remove", "--yes", "--include-state", "--entity", "counter-5", "counter"))[0]; r.code != 0 {
			t.Fatalf("data remove --entity:\n%v", r)
		}
		if got := records("--entity", "counter-5"); got != 0 || records() != all-one {
			t.Fatalf("after removing counter-5: %d of its records left, %d in all (want 0 and %d)", got, records(), all-one)
		}
		ex, _ := shard.NewHashCodeExtractor(30) // sharding.number-of-shards of adminFlags
		loc := struct{ Shard string }{string(ex.ShardID("counter-7"))}
		inShard := records("--shard", loc.Shard)
		if inShard < 1 {
			t.Fatalf("--shard %s: no records, but counter-7's state is in it", loc.Shard)
		}
		if r := ctlAll(ctl(m3, "data", "remove", "--yes", "--include-state", "--shard", loc.Shard, "counter"))[0]; r.code != 0 {
			t.Fatalf("data remove --shard:\n%v", r)
		}
		if got := records("--shard", loc.Shard); got != 0 || records() != all-one-inShard {
			t.Fatalf("after removing shard %s: %d of its records left, %d in all (want 0 and %d)", loc.Shard, got, records(), all-one-inShard)
		}
		rm := ctlAll(ctl(m3, "data", "remove", "--yes", "--include-state", "counter"))[0]
		if rm.code != 0 || !strings.Contains(rm.out, "removed") {
			t.Fatalf("data remove:\n%v", rm)
		}
		if r := ctlAll(ctl(m2, "types", "start", "counter"))[0]; r.code != 0 {
			t.Fatalf("types start:\n%v", r)
		}
		replies, errs := askAll(cl2, ids(90), "get")
		if len(errs) > 0 {
			t.Fatalf("asks after types start: %v", errs)
		}
		for id, v := range replies {
			if v != "0" {
				t.Fatalf("counter %s is %s after its data was removed: the type did not come back empty", id, v)
			}
		}
		for i := range 5 {
			got, err := cl2.Ask(t.Context(), "register", fmt.Sprint("r", i), []byte("get"))
			if err != nil || string(got) != fmt.Sprint("kept-", i) {
				t.Fatalf("register r%d after counter's data was removed: %q, %v", i, got, err)
			}
		}
	})
}
