package shardmesh_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
)

// hostedOn returns the members (by index) whose region hosts shard s of type typ (stopping
// or not).
func hostedOn(t *testing.T, systems []*shardmesh.System, typ, s string) []int {
	t.Helper()
	var on []int
	for i, sys := range systems {
		states, err := sys.Node().RegionState(context.Background(), typ)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(states, func(st node.ShardState) bool { return string(st.Shard) == s }) {
			on = append(on, i)
		}
	}
	return on
}

// shardOf returns the shard of entity id of type typ.
func shardOf(t *testing.T, sys *shardmesh.System, typ, id string) string {
	t.Helper()
	s, err := sys.Node().ShardOf(typ, shard.EntityID(id))
	if err != nil {
		t.Fatal(err)
	}
	return string(s)
}

// TestExternalAllocationAndPins, on two real members with sharding.allocation-strategy =
// external: a shard goes to the member that asked for it first, PinShard moves it to the
// other member, UnpinShard leaves it there, and nothing is rebalanced meanwhile.
func TestExternalAllocationAndPins(t *testing.T) {
	systems := startCluster(t, 2, func(c *config.Config) {
		c.Sharding.AllocationStrategy = "external"
		c.Membership.MinNrOfMembers = 2 // both regions registered before anything is allocated
	})
	regions := make([]*shardmesh.Region[string, int], len(systems))
	for i, s := range systems {
		r, err := shardmesh.Init(s, counterType())
		if err != nil {
			t.Fatal(err)
		}
		regions[i] = r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Entities whose shards differ, each asked for first by a different member: least-shard
	// or consistent hashing would spread them by count or hash; external puts each where
	// it was asked for.
	fromB, fromA := "b-entity", "a-entity"
	for shardOf(t, systems[0], counterKey.Name(), fromA) == shardOf(t, systems[0], counterKey.Name(), fromB) {
		fromA += "x"
	}
	if _, err := regions[1].EntityRefFor(fromB).Ask(ctx, "inc"); err != nil {
		t.Fatal(err)
	}
	if _, err := regions[0].EntityRefFor(fromA).Ask(ctx, "inc"); err != nil {
		t.Fatal(err)
	}
	sb, sa := shardOf(t, systems[0], counterKey.Name(), fromB), shardOf(t, systems[0], counterKey.Name(), fromA)
	if on := hostedOn(t, systems, counterKey.Name(), sb); !slices.Equal(on, []int{1}) {
		t.Fatalf("shard %s, asked for by member 2, is hosted on members %v", sb, on)
	}
	if on := hostedOn(t, systems, counterKey.Name(), sa); !slices.Equal(on, []int{0}) {
		t.Fatalf("shard %s, asked for by member 1, is hosted on members %v", sa, on)
	}

	// Pin a's shard to member 2, from member 2 (the coordinator runs on member 1 and learns
	// of the pin from the store).
	if err := systems[1].PinShard(ctx, counterKey.Name(), sa, systems[1].ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pinned shard "+sa+" moves to member 2", 10*time.Second, func() bool {
		return slices.Equal(hostedOn(t, systems, counterKey.Name(), sa), []int{1})
	})
	if n, err := regions[0].EntityRefFor(fromA).Ask(ctx, "inc"); err != nil || n != 1 {
		t.Fatalf("ask after the move = %d, %v; want 1 (a new incarnation on member 2)", n, err)
	}
	for i, s := range systems {
		waitFor(t, "the pin is known on member "+string(rune('1'+i)), 10*time.Second, func() bool {
			pins, err := s.ShardPins(ctx, counterKey.Name())
			return err == nil && pins[sa] == systems[1].ID() && len(pins) == 1
		})
	}

	// Unpinned, the shard stays: the external strategy never rebalances (rebalance-interval
	// is 1 s here; wait two rounds).
	if err := systems[0].UnpinShard(ctx, counterKey.Name(), sa); err != nil {
		t.Fatal(err)
	}
	if pins, err := systems[0].ShardPins(ctx, counterKey.Name()); err != nil || len(pins) != 0 {
		t.Fatalf("pins after unpin: %v, %v", pins, err)
	}
	time.Sleep(2200 * time.Millisecond)
	if on := hostedOn(t, systems, counterKey.Name(), sa); !slices.Equal(on, []int{1}) {
		t.Fatalf("unpinned shard %s moved to members %v", sa, on)
	}
	if on := hostedOn(t, systems, counterKey.Name(), sb); !slices.Equal(on, []int{1}) {
		t.Fatalf("shard %s was rebalanced to members %v", sb, on)
	}
}

func TestPinShardRefusesBadInput(t *testing.T) {
	systems := startCluster(t, 1, nil)
	s := systems[0]
	if _, err := shardmesh.Init(s, counterType()); err != nil {
		t.Fatal(err)
	}
	gateway := counterType()
	gateway.Key = shardmesh.NewEntityTypeKey[string, int]("gateway")
	gateway.Role = "gateway"
	if _, err := shardmesh.Init(s, gateway); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name   string
		err    error
		expect string
	}{
		{"unknown type", s.PinShard(ctx, "nope", "1", s.ID()), `unknown entity type "nope"`},
		{"empty shard", s.PinShard(ctx, "counter", "", s.ID()), `shard id "" must be 1 to 256 bytes`},
		{"long shard", s.PinShard(ctx, "counter", strings.Repeat("x", 257), s.ID()), "must be 1 to 256 bytes"},
		{"no member", s.PinShard(ctx, "counter", "1", ""), "no member named"},
		{"unknown member", s.PinShard(ctx, "counter", "1", "12D3KooWnobody"), `"12D3KooWnobody" is not a member of the cluster`},
		{"member without the role", s.PinShard(ctx, "gateway", "1", s.ID()), `does not have role "gateway"`},
		{"unpin unknown type", s.UnpinShard(ctx, "nope", "1"), `unpin nope/1: unknown entity type`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.expect) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.expect)
		}
	}
	if pins, err := s.ShardPins(ctx, "counter"); err != nil || len(pins) != 0 {
		t.Fatalf("a refused pin was stored: %v, %v", pins, err)
	}
}

// zoned is a custom strategy: shards go to the regions whose member has role zone (the
// fewest shards first) while there is one, and anywhere otherwise; it never rebalances.
type zoned struct{ zone string }

func (z zoned) Allocate(requester membership.NodeID, s shard.ID, v allocation.View) membership.NodeID {
	var in allocation.View
	for _, r := range v.Regions {
		if slices.Contains(r.Roles, z.zone) {
			in.Regions = append(in.Regions, r)
		}
	}
	if len(in.Regions) == 0 {
		in = v
	}
	return allocation.LeastShard{}.Allocate(requester, s, in)
}

func (zoned) Rebalance(allocation.View) []shard.ID { return nil }

// TestEntityStrategyOverridesTheConfiguredOne: a Strategy given in Entity decides for its
// type (and sees the members' roles); other types keep the configured strategy.
func TestEntityStrategyOverridesTheConfiguredOne(t *testing.T) {
	member := 0
	systems := startCluster(t, 2, func(c *config.Config) {
		member++
		if member == 2 {
			c.Node.Roles = []string{"zone-b"}
		}
		c.Membership.MinNrOfMembers = 2
	})
	placed := counterType()
	placed.Key = shardmesh.NewEntityTypeKey[string, int]("placed")
	placed.Strategy = zoned{zone: "zone-b"}
	var refs []*shardmesh.Region[string, int]
	for _, s := range systems {
		r, err := shardmesh.Init(s, placed)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
		if _, err := shardmesh.Init(s, counterType()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const entities = 20
	for i := range entities {
		id := "e" + string(rune('a'+i))
		if _, err := refs[0].EntityRefFor(id).Ask(ctx, "inc"); err != nil {
			t.Fatal(err)
		}
		if _, err := shardmesh.EntityRefFor(systems[0], counterKey, id).Ask(ctx, "inc"); err != nil {
			t.Fatal(err)
		}
	}
	live := func(i int, typ string) int { return liveEntities(t, systems[i:i+1], typ) }
	if a, b := live(0, "placed"), live(1, "placed"); a != 0 || b != entities {
		t.Fatalf("placed entities: %d on member 1, %d on the zone-b member; want all %d on zone-b", a, b, entities)
	}
	// The configured least-shard strategy spreads the other type over both members.
	if a, b := live(0, "counter"), live(1, "counter"); a == 0 || b == 0 || a+b != entities {
		t.Fatalf("counter entities: %d on member 1, %d on member 2; want both used", a, b)
	}
}

// TestPinsOfAProgramAreSigned: in a cluster with an admin set, a program's PinShard is
// signed with its admin identity (WithAdminIdentity), and every member follows it; without
// one, PinShard says what is missing and changes nothing.
func TestPinsOfAProgramAreSigned(t *testing.T) {
	adminKey, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	adminID, _ := peer.IDFromPrivateKey(adminKey)
	systems := startMembersOpts(t, 2, func(c *config.Config) {
		c.Node.AdminAllow = []string{adminID.String()}
		c.Membership.MinNrOfMembers = 2
	}, func(i int) []shardmesh.Option {
		if i == 0 {
			return []shardmesh.Option{shardmesh.WithAdminIdentity(adminKey)}
		}
		return nil
	})
	for _, s := range systems {
		if _, err := shardmesh.Init(s, counterType()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other := systems[1].ID()
	if err := systems[1].PinShard(ctx, "counter", "3", other); err == nil || !strings.Contains(err.Error(), "WithAdminIdentity") {
		t.Fatalf("a pin without an admin identity: %v", err)
	}
	if err := systems[0].PinShard(ctx, "counter", "3", other); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		pins, err := systems[1].ShardPins(ctx, "counter")
		if err == nil && pins["3"] == other {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other member does not follow the signed pin: %v %v", pins, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
