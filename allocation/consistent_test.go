package allocation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// peerIDs returns n distinct ids shaped like libp2p peer ids, from seed.
func peerIDs(seed uint64, n int) []membership.NodeID {
	const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
	rnd := rand.New(rand.NewPCG(seed, 0))
	out := make([]membership.NodeID, n)
	for i := range out {
		b := []byte("12D3KooW")
		for range 44 {
			b = append(b, alphabet[rnd.IntN(len(alphabet))])
		}
		out[i] = membership.NodeID(b)
	}
	return out
}

// numbered returns shard ids "0" … "n-1", as the default extractor makes them.
func numbered(n int) []shard.ID {
	out := make([]shard.ID, n)
	for i := range out {
		out[i] = shard.ID(strconv.Itoa(i))
	}
	return out
}

// upRegions returns empty Up regions of one version on nodes.
func upRegions(nodes []membership.NodeID) []Region {
	out := make([]Region, len(nodes))
	for i, n := range nodes {
		out[i] = Region{Node: n, Status: membership.Up, AppVersion: "1.0.0", UpNumber: uint64(i + 1)}
	}
	return out
}

// placement returns where s allocates each shard in view v.
func placement(s Strategy, v View, shards []shard.ID) map[shard.ID]membership.NodeID {
	out := make(map[shard.ID]membership.NodeID, len(shards))
	for _, id := range shards {
		out[id] = s.Allocate("", id, v)
	}
	return out
}

func newConsistentHashing(t testing.TB, cfg ConsistentHashingConfig) *ConsistentHashing {
	t.Helper()
	s, err := NewConsistentHashing(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The hash functions are part of the placement contract: changing them would move almost
// every shard of a running cluster on upgrade, so they are pinned to their published test
// vectors.
func TestRingHashVectors(t *testing.T) {
	if got := fnv1a64(""); got != 0xcbf29ce484222325 {
		t.Errorf(`fnv1a64("") = %#x`, got)
	}
	if got := fnv1a64("a"); got != 0xaf63dc4c8601ec8c {
		t.Errorf(`fnv1a64("a") = %#x`, got)
	}
	if got := fnv1a64("foobar"); got != 0x85944171f73967e8 {
		t.Errorf(`fnv1a64("foobar") = %#x`, got)
	}
	// SplitMix64 seeded with 0: 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f.
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := splitMix64(0, uint64(i)); got != want {
			t.Errorf("splitMix64(0, %d) = %#x, want %#x", i, got, want)
		}
	}
}

// A pinned placement, for the same reason: any change here moves shards in production.
func TestConsistentHashingGoldenPlacement(t *testing.T) {
	s := newConsistentHashing(t, ConsistentHashingConfig{})
	v := View{Regions: upRegions([]membership.NodeID{"node-a", "node-b", "node-c"})}
	var got []membership.NodeID
	for _, id := range numbered(12) {
		got = append(got, s.Allocate("", id, v))
	}
	want := []membership.NodeID{
		"node-b", "node-b", "node-b", "node-b", "node-b", "node-b",
		"node-b", "node-b", "node-c", "node-c", "node-c", "node-a",
	}
	if !slices.Equal(got, want) {
		t.Errorf("placement of shards 0-11 = %q, want %q", got, want)
	}
}

// Allocation depends on the set of members and the shard id only: not on the entity type
// (the shards each region holds), the order of the regions, who asks, or the regions' ages.
func TestConsistentHashingColocation(t *testing.T) {
	s := newConsistentHashing(t, ConsistentHashingConfig{})
	nodes := peerIDs(1, 7)
	shards := numbered(500)
	rnd := rand.New(rand.NewPCG(7, 7))

	building := View{Regions: upRegions(nodes)}
	device := View{Regions: upRegions(nodes)}
	for _, id := range shards { // two entity types, placed differently so far
		r := &building.Regions[rnd.IntN(len(nodes))]
		r.Shards = append(r.Shards, id)
		device.Regions[0].Shards = append(device.Regions[0].Shards, id)
	}
	slices.Reverse(device.Regions)
	for i := range device.Regions {
		device.Regions[i].UpNumber = uint64(100 - i)
	}

	for _, id := range shards {
		b, d := s.Allocate(nodes[0], id, building), s.Allocate(nodes[3], id, device)
		if b != d || b == "" {
			t.Fatalf("shard %s: building on %q, device on %q", id, b, d)
		}
	}

	// Once rebalanced, both types hold every shard id on the same member.
	for _, v := range []*View{&building, &device} {
		for round := 0; ; round++ {
			moves, next := plan(s, *v)
			if len(moves) == 0 {
				break
			}
			if round > 0 {
				t.Fatalf("unlimited consistent hashing needs a second round: %v", moves)
			}
			*v = next
		}
	}
	where := func(v View) map[shard.ID]membership.NodeID {
		out := map[shard.ID]membership.NodeID{}
		for _, r := range v.Regions {
			for _, id := range r.Shards {
				out[id] = r.Node
			}
		}
		return out
	}
	wb, wd := where(building), where(device)
	if len(wb) != len(shards) {
		t.Fatalf("building: %d shards placed, want %d", len(wb), len(shards))
	}
	for _, id := range shards {
		if wb[id] != wd[id] {
			t.Fatalf("after rebalance, shard %s: building on %q, device on %q", id, wb[id], wd[id])
		}
	}
}

// Adding a member moves about 1/N of the shards, all to the new member; removing one moves
// only the shards it had.
func TestConsistentHashingMovement(t *testing.T) {
	s := newConsistentHashing(t, ConsistentHashingConfig{})
	shards := numbered(1000)
	const trials = 20
	var joinMoved, leaveMoved []int
	for seed := range uint64(trials) {
		nodes := peerIDs(100+seed, 11)
		ten := View{Regions: upRegions(nodes[:10])}
		eleven := View{Regions: upRegions(nodes)}
		before, after := placement(s, ten, shards), placement(s, eleven, shards)
		moved := 0
		for _, id := range shards {
			if before[id] != after[id] {
				moved++
				if after[id] != nodes[10] {
					t.Fatalf("seed %d: shard %s moved from %s to %s, not to the new member", seed, id, before[id], after[id])
				}
			}
		}
		joinMoved = append(joinMoved, moved)

		// The member leaving the ten is the first; only its shards move.
		nine := View{Regions: upRegions(nodes[1:10])}
		left := placement(s, nine, shards)
		moved = 0
		for _, id := range shards {
			if before[id] != left[id] {
				moved++
				if before[id] != nodes[0] {
					t.Fatalf("seed %d: shard %s moved from %s, which stayed", seed, id, before[id])
				}
			}
		}
		leaveMoved = append(leaveMoved, moved)
	}
	mean := func(xs []int) float64 {
		sum := 0
		for _, x := range xs {
			sum += x
		}
		return float64(sum) / float64(len(xs))
	}
	t.Logf("1000 shards, 10 → 11 members: %v moved (mean %.1f, ideal 90.9)", joinMoved, mean(joinMoved))
	t.Logf("1000 shards, 10 → 9 members: %v moved (mean %.1f, ideal 100)", leaveMoved, mean(leaveMoved))
	if m := mean(joinMoved); m < 80 || m > 102 {
		t.Errorf("mean shards moved on join = %.1f, want 91 ± 11", m)
	}
	if m := mean(leaveMoved); m < 88 || m > 112 {
		t.Errorf("mean shards moved on leave = %.1f, want 100 ± 12", m)
	}
	for i := range trials {
		if joinMoved[i] < 50 || joinMoved[i] > 140 || leaveMoved[i] < 50 || leaveMoved[i] > 160 {
			t.Errorf("trial %d: %d moved on join, %d on leave: too far from 1/N", i, joinMoved[i], leaveMoved[i])
		}
	}
}

// The spread of shards over members, with the default 100 points per member.
func TestConsistentHashingSpread(t *testing.T) {
	s := newConsistentHashing(t, ConsistentHashingConfig{})
	shards := numbered(10000)
	worst := 0.0
	for seed := range uint64(10) {
		nodes := peerIDs(200+seed, 10)
		n := map[membership.NodeID]int{}
		for _, to := range placement(s, View{Regions: upRegions(nodes)}, shards) {
			n[to]++
		}
		for _, node := range nodes {
			worst = max(worst, float64(n[node])/1000)
		}
	}
	t.Logf("10 members, 10000 shards: the most loaded member holds %.2f× its fair share (worst of 10 trials)", worst)
	if worst > 1.4 {
		t.Errorf("most loaded member holds %.2f× its fair share, want at most 1.4×", worst)
	}
}

// Rebalance picks exactly the shards whose ring owner is not their region, in node id order
// and allocation order, skipping those in progress, at most the limit.
func TestConsistentHashingRebalance(t *testing.T) {
	nodes := []membership.NodeID{"node-a", "node-b", "node-c", "node-d"}
	shards := numbered(60)
	unlimited := newConsistentHashing(t, ConsistentHashingConfig{})
	abc := View{Regions: upRegions(nodes[:3])}
	for id, node := range placement(unlimited, abc, shards) {
		r := &abc.Regions[regionIndex(abc.Regions, node)]
		r.Shards = append(r.Shards, id)
	}
	for i := range abc.Regions {
		slices.Sort(abc.Regions[i].Shards) // an allocation order, deterministic
	}
	if got := unlimited.Rebalance(abc); got != nil {
		t.Fatalf("stable membership: Rebalance = %v, want nothing", got)
	}

	// node-d joins: exactly the shards it now owns move, and Plan puts them on it.
	abcd := cloneView(abc)
	abcd.Regions = append(abcd.Regions, upRegions(nodes)[3])
	owners := placement(unlimited, abcd, shards)
	var want []shard.ID
	for _, r := range abc.Regions { // node id order, then allocation order
		for _, id := range r.Shards {
			if owners[id] == "node-d" {
				want = append(want, id)
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("node-d owns no shard; pick other ids")
	}
	got := unlimited.Rebalance(abcd)
	if !slices.Equal(got, want) {
		t.Fatalf("after node-d joined: Rebalance = %v, want %v", got, want)
	}
	for _, m := range Plan(unlimited, abcd) {
		if m.To != "node-d" {
			t.Errorf("move %v: want it on node-d", m)
		}
	}
	// Reversing the regions changes nothing.
	rev := cloneView(abcd)
	slices.Reverse(rev.Regions)
	if got := unlimited.Rebalance(rev); !slices.Equal(got, want) {
		t.Errorf("regions reversed: Rebalance = %v, want %v", got, want)
	}

	limited := newConsistentHashing(t, ConsistentHashingConfig{RebalanceLimit: 2})
	if got := limited.Rebalance(abcd); !slices.Equal(got, want[:2]) {
		t.Errorf("limit 2: Rebalance = %v, want %v", got, want[:2])
	}
	// In progress: not picked again, and the limit counts only this round's picks.
	if got := limited.Rebalance(withInProgress(abcd, want[:2]...)); !slices.Equal(got, want[2:min(4, len(want))]) {
		t.Errorf("limit 2, %v in progress: Rebalance = %v, want %v", want[:2], got, want[2:min(4, len(want))])
	}
	if got := unlimited.Rebalance(withInProgress(abcd, want...)); got != nil {
		t.Errorf("all in progress: Rebalance = %v, want nothing", got)
	}

	// Not a good time: rolling update, a member joining, a member unreachable.
	rolling := cloneView(abcd)
	rolling.Regions[1].AppVersion = "1.0.1"
	joining := cloneView(abcd)
	joining.Regions[3].Status = membership.Joining
	unreachable := cloneView(abcd)
	unreachable.MemberUnreachable = true
	otherJoining := cloneView(abcd)
	otherJoining.MemberJoining = true
	for name, v := range map[string]View{"rolling": rolling, "joining": joining, "unreachable": unreachable, "other joining": otherJoining} {
		if got := unlimited.Rebalance(v); got != nil {
			t.Errorf("%s: Rebalance = %v, want nothing", name, got)
		}
	}
}

// Members on their way out are left off the ring while another region remains.
func TestConsistentHashingAvoidsLeavingMembers(t *testing.T) {
	s := newConsistentHashing(t, ConsistentHashingConfig{})
	nodes := peerIDs(3, 4)
	shards := numbered(400)
	v := View{Regions: upRegions(nodes)}
	full := placement(s, v, shards)
	v.Regions[2].Status = membership.Leaving
	v.Regions[3].Status = membership.Exiting
	without := placement(s, View{Regions: upRegions(nodes[:2])}, shards)
	got := placement(s, v, shards)
	for _, id := range shards {
		if got[id] != without[id] {
			t.Fatalf("shard %s on %s, want %s (as if the leaving members were gone)", id, got[id], without[id])
		}
	}
	for i := range v.Regions {
		v.Regions[i].Status = membership.Leaving
	}
	if got := placement(s, v, shards); fmt.Sprint(got) != fmt.Sprint(full) {
		t.Fatal("all members leaving: want the ring of all of them")
	}
	if got := s.Allocate("", "1", View{}); got != "" {
		t.Fatalf("no regions: Allocate = %q, want \"\"", got)
	}
}

// The bucket index finds the same point as a plain search, at the edges too: position 0,
// the largest position, exactly on a point, and past the last point (wrapping to the first).
func TestHashRingLookup(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 100} {
		for _, vnodes := range []int{1, 7, 100} {
			r := newHashRing(peerIDs(uint64(n*1000+vnodes), n), vnodes)
			slow := func(pos uint64) membership.NodeID {
				for _, p := range r.points {
					if p.pos >= pos {
						return r.nodes[p.node]
					}
				}
				return r.nodes[r.points[0].node]
			}
			probes := []uint64{0, 1, ^uint64(0), r.points[0].pos, r.points[len(r.points)-1].pos, r.points[len(r.points)-1].pos + 1}
			for _, p := range r.points {
				probes = append(probes, p.pos, p.pos-1, p.pos+1)
			}
			rnd := rand.New(rand.NewPCG(uint64(n), uint64(vnodes)))
			for range 1000 {
				probes = append(probes, rnd.Uint64())
			}
			for _, pos := range probes {
				if got, want := r.nodeAt(pos), slow(pos); got != want {
					t.Fatalf("%d nodes × %d points, position %#x: %s, want %s", n, vnodes, pos, got, want)
				}
			}
		}
	}
	if got := newHashRing(nil, 100).nodeAt(42); got != "" {
		t.Fatalf("empty ring: %q", got)
	}
}

// The remembered ring never changes an answer, even when goroutines share one strategy
// across views with different members.
func TestConsistentHashingConcurrentUse(t *testing.T) {
	shared := newConsistentHashing(t, ConsistentHashingConfig{})
	nodes := peerIDs(9, 6)
	views := []View{
		{Regions: upRegions(nodes[:3])},
		{Regions: upRegions(nodes[2:])},
		{Regions: upRegions(nodes)},
	}
	shards := numbered(300)
	want := make([]map[shard.ID]membership.NodeID, len(views))
	for i, v := range views {
		want[i] = placement(newConsistentHashing(t, ConsistentHashingConfig{}), v, shards)
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for k := range 2000 {
				i := (g + k) % len(views)
				id := shards[(k*7+g)%len(shards)]
				if got := shared.Allocate("", id, views[i]); got != want[i][id] {
					errs <- fmt.Errorf("goroutine %d: shard %s in view %d on %s, want %s", g, id, i, got, want[i][id])
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
