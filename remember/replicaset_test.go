package remember

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// testLayout puts keys "u/SHARD/…" in the unit of shard SHARD of type "t", the rest in the
// metadata.
type testLayout struct{}

func (testLayout) UnitOf(key string) Unit {
	rest, ok := strings.CutPrefix(key, "u/")
	if !ok {
		return Unit{}
	}
	shard, _, ok := strings.Cut(rest, "/")
	if !ok {
		return Unit{}
	}
	return Unit{Type: "t", Shard: shard}
}

func (l testLayout) UnitOfPrefix(p string) (Unit, bool) {
	if !strings.HasPrefix(p, "u/") {
		return Unit{}, !strings.HasPrefix("u/", p)
	}
	u := l.UnitOf(p)
	return u, !u.Meta()
}

func (testLayout) Prefixes(u Unit) []string { return []string{"u/" + u.Shard + "/"} }
func (testLayout) ConfigKey(u Unit) string  { return "rc/" + u.Type + "/" + u.Shard }

// unitCluster is a cluster of n members with the test layout.
func unitCluster(t *testing.T, n int, tune func(*Config)) *cluster {
	return newCluster(t, n, func(cfg *Config) {
		cfg.Layout = testLayout{}
		if tune != nil {
			tune(cfg)
		}
	})
}

// holders returns the members whose disks hold key.
func (c *cluster) holders(key string) []int {
	var out []int
	for i, s := range c.stores {
		if s == nil {
			continue
		}
		if e := c.local(i, key); !e.absent() {
			out = append(out, i)
		}
	}
	return out
}

func (c *cluster) id(i int) NodeID { return NodeID(c.hosts[i].ID().String()) }

func TestPlacementTarget(t *testing.T) {
	var ms []PlacedMember
	for i := range 6 {
		ms = append(ms, PlacedMember{ID: NodeID(fmt.Sprintf("m%d", i)), Zone: fmt.Sprintf("z%d", i%3), Roles: []string{"r"}, Age: uint64(6 - i)})
	}
	ms = append(ms, PlacedMember{ID: "x", Zone: "z0", Age: 7}) // not of role r
	p := NewPlacement(ms, 3, 5, map[string]string{"t": "r"})
	if got := p.Meta(); !slices.Equal(got, []NodeID{"m5", "m4", "m3", "m2", "m1"}) {
		t.Errorf("metadata on %v, want the oldest five", got)
	}
	count := map[NodeID]int{}
	for s := range 600 {
		u := Unit{Type: "t", Shard: fmt.Sprint(s)}
		home := NodeID(fmt.Sprintf("m%d", s%6))
		set := p.Target(u, home)
		if len(set) != 3 || set[0] != home {
			t.Fatalf("%v: set %v with home %s", u, set, home)
		}
		for _, id := range set {
			if id == "x" {
				t.Fatalf("%v: %v holds a member without the role", u, set)
			}
			count[id]++
		}
		if !slices.Equal(set, p.Target(u, home)) {
			t.Fatal("not deterministic")
		}
		zs := map[string]bool{}
		for _, id := range set {
			for _, m := range ms {
				if m.ID == id {
					zs[m.Zone] = true
				}
			}
		}
		if len(zs) != 3 {
			t.Fatalf("%v: %v spans %d zones of 3", u, set, len(zs))
		}
	}
	for id, n := range count {
		if n > 600*60/100 {
			t.Errorf("%s holds %d of 600 shards (ideal 300)", id, n)
		}
	}
	// Fewer members than the factor: all of them.
	small := NewPlacement(ms[:2], 3, 5, nil)
	if got := small.Target(Unit{Type: "t", Shard: "1"}, ""); len(got) != 2 {
		t.Errorf("two members: set %v", got)
	}
	if got := small.Target(Unit{}, ""); got != nil {
		t.Errorf("the metadata's target: %v", got)
	}
}

// TestShardOnItsReplicaSet: a shard's records live on its host and two others of five,
// writes and reads go on with one of the three stopped, and its configuration is in the
// metadata, where any member finds it.
func TestShardOnItsReplicaSet(t *testing.T) {
	c := unitCluster(t, 5, func(cfg *Config) { cfg.Timeout = 500 * time.Millisecond })
	ctx := testContext(t)
	u := Unit{Type: "t", Shard: "7"}
	c.stores[0].Host(u, 1)
	for i := range 20 {
		if err := c.stores[0].Write(ctx, Write{Key: fmt.Sprintf("u/7/e%d", i), Value: []byte("v"), Epoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	set := c.stores[0].Units()[0].Config.Set
	if len(set) != 3 || set[0] != c.id(0) {
		t.Fatalf("replica set %v, want three with the host first", set)
	}
	waitFor(t, "the three replicas to hold every record", func() bool { return len(c.holders("u/7/e19")) == 3 })
	for _, i := range c.holders("u/7/e0") {
		if !slices.Contains(set, c.id(i)) {
			t.Errorf("member %d holds a record outside the set %v", i, set)
		}
	}
	// Another member reads it through the configuration.
	for i := range c.stores {
		if slices.Contains(set, c.id(i)) {
			continue
		}
		if rec, found, err := c.stores[i].Get(ctx, "u/7/e3"); err != nil || !found || string(rec.Value) != "v" {
			t.Fatalf("member %d outside the set reads %+v %v %v", i, rec, found, err)
		}
		break
	}
	// One replica stopped: writes go on.
	var stop int
	for i := range c.stores {
		if i != 0 && slices.Contains(set, c.id(i)) {
			stop = i
			break
		}
	}
	c.closeStore(stop)
	for i := range 20 {
		if err := c.stores[0].Write(ctx, Write{Key: fmt.Sprintf("u/7/e%d", i), Value: []byte("w"), Epoch: 1}); err != nil {
			t.Fatalf("write with one replica of three stopped: %v", err)
		}
	}
	if rec, _, err := c.stores[0].Get(ctx, "u/7/e5"); err != nil || string(rec.Value) != "w" {
		t.Fatalf("read with one replica of three stopped: %+v %v", rec, err)
	}
}

// TestReadNamesMissingReplicas: a read that cannot reach a majority of the set fails
// naming the replicas that did not answer.
func TestReadNamesMissingReplicas(t *testing.T) {
	c := unitCluster(t, 5, func(cfg *Config) { cfg.Timeout = 300 * time.Millisecond })
	ctx := testContext(t)
	u := Unit{Type: "t", Shard: "3"}
	c.stores[0].Host(u, 1)
	if err := c.stores[0].Write(ctx, Write{Key: "u/3/a", Value: []byte("v"), Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	set := c.stores[0].Units()[0].Config.Set
	var stopped []NodeID
	for i := range c.stores {
		if i != 0 && slices.Contains(set, c.id(i)) {
			c.closeStore(i)
			stopped = append(stopped, c.id(i))
		}
	}
	_, _, err := c.stores[0].Get(ctx, "u/3/a")
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Unit != "t/3" || len(qe.Missing) != 2 {
		t.Fatalf("read with two replicas of three stopped: %v", err)
	}
	for _, id := range stopped {
		if !strings.Contains(err.Error(), string(id)) {
			t.Errorf("the error does not name %s: %v", id, err)
		}
	}
}

// TestMoveWhenAReplicaLeaves: when a replica may no longer hold the shard (here it lost
// the type's role), the host moves the records to another member — every record, tombstone
// and fence floor — and the former replica drops its copy.
func TestMoveWhenAReplicaLeaves(t *testing.T) {
	c := unitCluster(t, 5, nil)
	ctx := testContextFor(t, 3*time.Minute) // 6,000 calls one after the other: 17 s alone under -race
	c.setRoles(map[int]bool{})
	u := Unit{Type: "t", Shard: "9"}
	c.stores[0].Host(u, 4)
	for i := range 3000 {
		w := Write{Key: fmt.Sprintf("u/9/e%04d", i), Value: []byte("v"), Epoch: 4}
		if i%10 == 0 {
			w = Write{Key: w.Key, Delete: true, Epoch: 4}
		}
		if err := c.stores[0].Write(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.stores[0].GetFenced(ctx, "u/9/e0001", 6); err != nil {
		t.Fatal(err)
	}
	set := c.stores[0].Units()[0].Config.Set
	var leaving int
	for i := range c.stores {
		if i != 0 && slices.Contains(set, c.id(i)) {
			leaving = i
			break
		}
	}
	waitFor(t, "the leaving replica to hold the records", func() bool { return slices.Contains(c.holders("u/9/e2999"), leaving) })
	c.setRoles(map[int]bool{leaving: true}) // it loses role r
	waitFor(t, "the move", func() bool {
		us := c.stores[0].Units()
		return len(us) == 1 && !us[0].Moving && !slices.Contains(us[0].Config.Set, c.id(leaving)) && len(us[0].Config.Gone) == 0 && us[0].Phase == ""
	})
	newSet := c.stores[0].Units()[0].Config.Set
	if len(newSet) != 3 {
		t.Fatalf("new set %v", newSet)
	}
	for _, key := range []string{"u/9/e0000", "u/9/e0001", "u/9/e2999"} {
		for _, i := range c.holders(key) {
			if !slices.Contains(newSet, c.id(i)) {
				t.Errorf("%s still on member %d outside the new set", key, i)
			}
		}
	}
	// Every record, and every tombstone, reads the same after the move.
	for i := range 3000 {
		rec, found, err := c.stores[0].Get(ctx, fmt.Sprintf("u/9/e%04d", i))
		if err != nil || found != (i%10 != 0) || (found && string(rec.Value) != "v") {
			t.Fatalf("e%04d after the move: %+v %v %v", i, rec, found, err)
		}
	}
	// The fence floor moved with the records.
	if err := c.stores[0].Write(ctx, Write{Key: "u/9/e0001", Value: []byte("old"), Epoch: 5}); !errors.Is(err, ErrFenced) {
		t.Errorf("a write below the moved fence: %v", err)
	}
	if st := c.stores[0].Stats(); st.Moves != 1 || st.Copied < 3000 {
		t.Errorf("stats after the move: %d moves, %d copied", st.Moves, st.Copied)
	}
}

// TestNewHostFencesTheOld: a shard that moved to another member is moved (if need be) by
// its new host, which reads the configuration fenced by its epoch: the former host can no
// longer change it.
func TestNewHostFencesTheOld(t *testing.T) {
	c := unitCluster(t, 4, nil)
	ctx := testContext(t)
	u := Unit{Type: "t", Shard: "2"}
	c.stores[0].Host(u, 1)
	for i := range 50 {
		if err := c.stores[0].Write(ctx, Write{Key: fmt.Sprintf("u/2/e%d", i), Value: []byte("v"), Epoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	c.stores[3].Host(u, 2)
	waitFor(t, "the new host's set", func() bool {
		us := c.stores[3].Units()
		return len(us) == 1 && us[0].Known && !us[0].Moving && slices.Contains(us[0].Config.Set, c.id(3)) && us[0].Phase == ""
	})
	for i := range 50 {
		if rec, found, err := c.stores[3].Get(ctx, fmt.Sprintf("u/2/e%d", i)); err != nil || !found || string(rec.Value) != "v" {
			t.Fatalf("e%d on the new host: %+v %v %v", i, rec, found, err)
		}
	}
	// The former host's writes of the configuration are refused.
	err := c.stores[0].Write(ctx, Write{Key: testLayout{}.ConfigKey(u), Value: []byte(`{"set":["x"]}`), Epoch: 1})
	if !errors.Is(err, ErrFenced) {
		t.Errorf("the former host changed the configuration: %v", err)
	}
}

// TestTombstonesCollected: once every replica of a shard holds the same records, its host
// has their tombstones collected.
func TestTombstonesCollected(t *testing.T) {
	c := unitCluster(t, 4, nil)
	ctx := testContext(t)
	u := Unit{Type: "t", Shard: "5"}
	c.stores[1].Host(u, 1)
	for i := range 100 {
		key := fmt.Sprintf("u/5/e%d", i)
		if err := c.stores[1].Write(ctx, Write{Key: key, Value: []byte("v"), Epoch: 1}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := c.stores[1].Write(ctx, Write{Key: key, Delete: true, Epoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "the tombstones to be collected", func() bool {
		return len(c.holders("u/5/e0")) == 0 && len(c.holders("u/5/e98")) == 0 && len(c.holders("u/5/e99")) == 3
	})
	if us := c.stores[1].Units(); us[0].Held != 50 || us[0].Tombstones != 0 {
		t.Errorf("the host holds %d records, %d tombstones", us[0].Held, us[0].Tombstones)
	}
}

// setRoles gives every member role r but those in without.
func (c *cluster) setRoles(without map[int]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := make([]PlacedMember, len(c.members))
	for i, id := range c.members {
		ms[i] = PlacedMember{ID: id, Age: uint64(i + 1)}
		if !without[i] {
			ms[i].Roles = []string{"r"}
		}
	}
	c.place = NewPlacement(ms, 0, 0, map[string]string{"t": "r"})
}

// setAway marks members away (departing: they may hold no shard's records), by index.
func (c *cluster) setAway(away map[int]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := make([]PlacedMember, len(c.members))
	for i, id := range c.members {
		ms[i] = PlacedMember{ID: id, Age: uint64(i + 1), Away: away[i]}
	}
	c.place = NewPlacement(ms, 0, 0, nil)
}

// TestOneOfTwoLeaves: in a cluster of two, the member that departs is taken out of every
// set — those it hosts, those its peer hosts, and those of shards no member hosts (their
// home, the first of the set, cares for them as any survivor would) — so that it can
// leave: the one member left holds every record (2 → 1, as 3 → 2). Before, Placement.Keep
// kept the departing member in each set of two (one member left is less than a majority
// of two), a caretaker did nothing while the set's home was a member, even when the home
// hosted nothing, and the leave waited out the shutdown timeout (e2e TestAdmin/leave).
func TestOneOfTwoLeaves(t *testing.T) {
	c := unitCluster(t, 2, nil)
	ctx := testContext(t)
	both := []NodeID{c.id(0), c.id(1)}
	// Shard 1 hosted by the member that stays, 2 by the one that departs; 3 and 4 were,
	// and are hosted by no member now.
	host := map[string]int{"1": 0, "2": 1, "3": 0, "4": 1}
	for shard, i := range host {
		u := Unit{Type: "t", Shard: shard}
		c.stores[i].Host(u, 1)
		for e := range 10 {
			if err := c.stores[i].Write(ctx, Write{Key: fmt.Sprintf("u/%s/e%d", shard, e), Value: []byte(shard), Epoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if cfg := c.unitConfig(ctx, 0, u); !equalSets(cfg.Set, both) {
			t.Fatalf("%v before: %+v, want a set of both", u, cfg)
		}
	}
	c.stores[0].Unhost(Unit{Type: "t", Shard: "3"})
	c.stores[1].Unhost(Unit{Type: "t", Shard: "4"})
	c.setAway(map[int]bool{1: true})
	for shard := range host {
		u := Unit{Type: "t", Shard: shard}
		waitFor(t, fmt.Sprintf("%v's set to leave the departing member out", u), func() bool {
			cfg := c.unitConfig(ctx, 0, u)
			return !cfg.moving() && slices.Equal(cfg.Set, []NodeID{c.id(0)})
		})
		for _, key := range []string{"u/" + shard + "/e0", "u/" + shard + "/e9"} {
			if h := c.holders(key); !slices.Contains(h, 0) {
				t.Errorf("%s held by members %v, not by the member that stays", key, h)
			}
		}
	}
	// The stayer hosts the departing member's shards and reads every record.
	for _, shard := range []string{"2", "4"} {
		c.stores[0].Host(Unit{Type: "t", Shard: shard}, 2)
		for e := range 10 {
			if rec, found, err := c.stores[0].Get(ctx, fmt.Sprintf("u/%s/e%d", shard, e)); err != nil || !found || string(rec.Value) != shard {
				t.Fatalf("u/%s/e%d on the member left: %+v %v %v", shard, e, rec, found, err)
			}
		}
	}
}

// unitConfig reads u's replica configuration through member i's store (the zero one when
// the read fails: the metadata group may be changing its voters).
func (c *cluster) unitConfig(ctx context.Context, i int, u Unit) UnitConfig {
	c.t.Helper()
	rec, found, err := c.stores[i].Get(ctx, testLayout{}.ConfigKey(u))
	if err != nil || !found {
		return UnitConfig{}
	}
	cfg, err := DecodeUnitConfig(rec.Value)
	if err != nil {
		c.t.Fatal(err)
	}
	return cfg
}

// TestReturningReplicaDropsFirst: a replica taken out of a set while it was no member (its
// store stopped, the member downed) still holds its copies when it comes back with the
// same id and disk — live records among them whose deletes the set has collected since.
// It owes a drop (it stays in the configuration's Gone) and drops them before it joins
// the set again: nothing deleted comes back. Before, the host counted a former replica
// that was no member as dropped ("its copies left with it"); back in the set, its stale
// live records were merged back by anti-entropy.
func TestReturningReplicaDropsFirst(t *testing.T) {
	c := unitCluster(t, 6, nil) // the metadata on the oldest five: member 5 is no voter
	ctx := testContext(t)
	const victim = 5
	var u Unit
	for i := range 1000 {
		u = Unit{Type: "t", Shard: fmt.Sprint(i)}
		if slices.Contains(c.placement().Target(u, c.id(0)), c.id(victim)) {
			break
		}
	}
	c.stores[0].Host(u, 1)
	key := func(i int) string { return fmt.Sprintf("u/%s/e%d", u.Shard, i) }
	for i := range 10 {
		if err := c.stores[0].Write(ctx, Write{Key: key(i), Value: []byte("v"), Epoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the victim to hold the records", func() bool { return slices.Contains(c.holders(key(9)), victim) })

	c.closeStore(victim) // it stops, and is downed
	c.stores[victim] = nil
	c.setMembers(0, 1, 2, 3, 4)
	for _, s := range c.stores[:victim] {
		s.MembersChanged()
	}
	waitFor(t, "the set to move off the victim", func() bool {
		us := c.stores[0].Units()
		return len(us) == 1 && !us[0].Moving && us[0].Phase == "" && len(us[0].Config.Set) == 3 && !slices.Contains(us[0].Config.Set, c.id(victim))
	})
	if cfg := c.unitConfig(ctx, 0, u); !slices.Contains(cfg.Gone, c.id(victim)) {
		t.Errorf("configuration %+v: the victim, no member, does not owe a drop", cfg)
	}
	for i := range 5 {
		if err := c.stores[0].Write(ctx, Write{Key: key(i), Delete: true, Epoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the tombstones to be collected", func() bool { return len(c.holders(key(0))) == 0 && len(c.holders(key(4))) == 0 })

	c.open(victim) // back with the same id and disk: it still holds e0…e9
	c.setMembers(0, 1, 2, 3, 4, 5)
	for _, s := range c.stores {
		s.MembersChanged()
	}
	waitFor(t, "the set to take the victim back", func() bool {
		us := c.stores[0].Units()
		return len(us) == 1 && !us[0].Moving && us[0].Phase == "" && slices.Contains(us[0].Config.Set, c.id(victim)) && len(us[0].Config.Gone) == 0
	})
	for i := range 10 {
		if e := c.local(victim, key(i)); i < 5 && !e.absent() && !e.rec.Deleted {
			t.Errorf("%s, deleted and collected, is live again on the returning replica", key(i))
		}
		rec, found, err := c.stores[0].Get(ctx, key(i))
		if err != nil || found != (i >= 5) || (found && string(rec.Value) != "v") {
			t.Errorf("%s after the victim's return: %+v found %v, %v", key(i), rec, found, err)
		}
	}
}

// TestMetadataVotersStayOdd: an away member leaves the metadata's voters, unless the rest
// are an even number and it still runs (leaving, not downed): then it stays until it is
// gone from the membership. With three members, one leaving and then another killed, the
// group of the two others had lost its majority for good (reminder soak seed 68); with the
// leaving member's vote it moves to the last one.
func TestMetadataVotersStayOdd(t *testing.T) {
	member := func(id string, age uint64, away, down bool) PlacedMember {
		return PlacedMember{ID: NodeID(id), Age: age, Voter: true, Away: away, Down: down}
	}
	for _, tc := range []struct {
		name    string
		members []PlacedMember
		want    []NodeID
	}{
		{"one of three leaving stays", []PlacedMember{member("a", 1, true, false), member("b", 2, false, false), member("c", 3, false, false)}, []NodeID{"a", "b", "c"}},
		{"then another downed: the last one", []PlacedMember{member("a", 1, true, false), member("b", 2, true, true), member("c", 3, false, false)}, []NodeID{"c"}},
		{"a downed one never stays", []PlacedMember{member("a", 1, true, true), member("b", 2, false, false), member("c", 3, false, false)}, []NodeID{"b", "c"}},
		{"one of four leaving goes", []PlacedMember{member("a", 1, true, false), member("b", 2, false, false), member("c", 3, false, false), member("d", 4, false, false)}, []NodeID{"b", "c", "d"}},
		{"the oldest of two leaving stays", []PlacedMember{member("a", 1, false, false), member("b", 2, false, false), member("c", 3, true, false), member("d", 4, true, false)}, []NodeID{"a", "b", "c"}},
	} {
		if got := NewPlacement(tc.members, 3, 0, nil).Meta(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: metadata voters %v, want %v", tc.name, got, tc.want)
		}
	}
}
