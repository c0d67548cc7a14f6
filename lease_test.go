package shardmesh_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/lease"
)

// TestShardsHoldTheStoreLease: with use-lease = store, two real members run entities whose
// shards hold their leases in the replicated store; a handed-off shard's lease moves with it
// (released by the old home, taken by the new), and every entity still answers.
func TestShardsHoldTheStoreLease(t *testing.T) {
	systems := startCluster(t, 2, func(c *config.Config) {
		c.Membership.MinNrOfMembers = 2
		c.Sharding.Lease.Use = "store"
		c.Sharding.Lease.HeartbeatTimeout, c.Sharding.Lease.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
		c.Sharding.Lease.RetryInterval = 200 * time.Millisecond
	})
	for _, s := range systems {
		if _, err := shardmesh.Init(s, durableType()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for e := range 20 {
		if got, err := shardmesh.EntityRefFor(systems[e%2], durableType().Key, fmt.Sprint("c", e)).Ask(ctx, "inc"); err != nil || got != 1 {
			t.Fatalf("inc c%d: %d, %v", e, got, err)
		}
	}
	// Member 2 leaves: its shards' leases are released and taken by member 1.
	if err := systems[1].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	systems[1].Close()
	for e := range 20 {
		if got, err := shardmesh.EntityRefFor(systems[0], durableType().Key, fmt.Sprint("c", e)).Ask(ctx, "inc"); err != nil || got != 2 {
			t.Fatalf("inc c%d after the leave: %d, %v", e, got, err)
		}
	}
}

// TestUnknownLeaseProviderIsRefused: use-lease naming no provider fails Start, naming it.
func TestUnknownLeaseProviderIsRefused(t *testing.T) {
	cfg := config.Default()
	cfg.Node.DataDir = t.TempDir()
	cfg.Node.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Sharding.Lease.Use = "zookeeper"
	_, err := shardmesh.Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), `"zookeeper"`) {
		t.Fatalf("Start: %v", err)
	}
	cfg.Node.DataDir = t.TempDir()
	s, err := shardmesh.Start(context.Background(), cfg, shardmesh.WithLease("zookeeper", lease.NewStoreProvider(nil, lease.StoreConfig{})))
	if err != nil {
		t.Fatalf("Start with the provider: %v", err)
	}
	s.Close()
}

// gate is a lease provider a test opens and closes: an external lease, as a user plugs in.
type gate struct{ open atomic.Bool }

func (g *gate) Lease(string, string) lease.Lease { return gateLease{g} }

type gateLease struct{ g *gate }

func (l gateLease) Acquire(context.Context, func(error)) (bool, error) { return l.g.open.Load(), nil }
func (l gateLease) Release(context.Context) error                      { return nil }
func (l gateLease) CheckLease() bool                                   { return l.g.open.Load() }

// TestNoEntityWithoutTheLease: with a provider that grants no lease, messages wait (no
// entity is created); once it grants them, the waiting messages are handled.
func TestNoEntityWithoutTheLease(t *testing.T) {
	g := &gate{}
	systems := startMembersOpts(t, 1, func(c *config.Config) {
		c.Sharding.Lease.Use, c.Sharding.Lease.RetryInterval = "gate", 100*time.Millisecond
	}, func(int) []shardmesh.Option { return []shardmesh.Option{shardmesh.WithLease("gate", g)} })
	if _, err := shardmesh.Init(systems[0], durableType()); err != nil {
		t.Fatal(err)
	}
	ref := shardmesh.EntityRefFor(systems[0], durableType().Key, "c1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := ref.Ask(ctx, "inc")
	cancel()
	if err == nil {
		t.Fatal("an entity answered without its shard's lease")
	}
	if n := liveEntities(t, systems, "durable"); n != 0 {
		t.Fatalf("%d entities live without the lease", n)
	}
	g.open.Store(true)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := ref.Ask(ctx, "inc"); err != nil || got < 1 {
		t.Fatalf("after the lease was granted: %d, %v", got, err)
	}
}
