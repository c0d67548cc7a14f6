package shardmesh_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
)

// durableCounter keeps its count as durable state: loaded on the first message, saved
// before an increment is answered.
type durableCounter struct {
	n      int
	loaded bool
}

func (c *durableCounter) Receive(ctx *shardmesh.Context, op string) (int, error) {
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !c.loaded {
		b, err := ctx.LoadState(sctx)
		if err != nil {
			return 0, err
		}
		if b != nil {
			if c.n, err = strconv.Atoi(string(b)); err != nil {
				return 0, err
			}
		}
		c.loaded = true
	}
	if op == "inc" {
		if err := ctx.SaveState(sctx, []byte(strconv.Itoa(c.n+1))); err != nil {
			c.loaded = false
			return 0, err
		}
		c.n++
	}
	return c.n, nil
}

func durableType() shardmesh.Entity[string, int] {
	return shardmesh.Entity[string, int]{
		Key:              shardmesh.NewEntityTypeKey[string, int]("durable"),
		New:              func(*shardmesh.Context) shardmesh.Behavior[string, int] { return &durableCounter{} },
		MessageCodec:     shardmesh.StringCodec{},
		ReplyCodec:       shardmesh.JSONCodec[int]{},
		RememberEntities: true,
	}
}

// liveEntities counts the live entities of type typ on every member.
func liveEntities(t *testing.T, systems []*shardmesh.System, typ string) int {
	t.Helper()
	total := 0
	for _, s := range systems {
		states, err := s.Node().RegionState(context.Background(), typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			total += len(st.Entities)
		}
	}
	return total
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
	}
}

// TestRememberedEntitiesAndDurableState, on real members (libp2p, Badger, the replicated
// store with its default quorums): remembered entities start again without a message after
// a member leaves and after a full-cluster restart, and their durable state keeps every
// acknowledged increment.
func TestRememberedEntitiesAndDurableState(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	start := func(n int) []*shardmesh.System {
		i := 0
		systems := startCluster(t, n, func(c *config.Config) {
			c.Node.DataDir = dirs[i]
			c.Membership.MinNrOfMembers = n
			i++
		})
		for _, s := range systems {
			if _, err := shardmesh.Init(s, durableType()); err != nil {
				t.Fatal(err)
			}
		}
		return systems
	}
	systems := start(3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const entities = 40
	for round := 1; round <= 2; round++ {
		for e := range entities {
			got, err := shardmesh.EntityRefFor(systems[e%3], durableType().Key, fmt.Sprint("c", e)).Ask(ctx, "inc")
			if err != nil {
				t.Fatalf("inc c%d: %v", e, err)
			}
			if got != round {
				t.Fatalf("c%d answered %d after %d increments", e, got, round)
			}
		}
	}
	waitFor(t, "40 live entities", 10*time.Second, func() bool { return liveEntities(t, systems, "durable") == entities })

	// Member 3 leaves: its entities start again on the others, without a message.
	if err := systems[2].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	systems[2].Close()
	waitFor(t, "every remembered entity running on the two left", 20*time.Second, func() bool {
		return liveEntities(t, systems[:2], "durable") == entities
	})

	// Full restart of the two: the same entities run again, with their counts.
	for _, s := range systems[:2] {
		s.Close()
	}
	systems = start(2)
	waitFor(t, "every remembered entity running after a full restart", 30*time.Second, func() bool {
		return liveEntities(t, systems, "durable") == entities
	})
	for e := range entities {
		got, err := shardmesh.EntityRefFor(systems[0], durableType().Key, fmt.Sprint("c", e)).Ask(ctx, "get")
		if err != nil || got != 2 {
			t.Fatalf("c%d after a full restart: %d, %v", e, got, err)
		}
	}
}
