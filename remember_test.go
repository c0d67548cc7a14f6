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
	if op == "passivate" {
		ctx.Passivate()
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
	start := func(dirs ...string) []*shardmesh.System {
		i := 0
		systems := startCluster(t, len(dirs), func(c *config.Config) {
			c.Node.DataDir = dirs[i]
			c.Membership.MinNrOfMembers = len(dirs)
			i++
		})
		for _, s := range systems {
			if _, err := shardmesh.Init(s, durableType()); err != nil {
				t.Fatal(err)
			}
		}
		return systems
	}
	systems := start(dirs...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const entities = 40
	ask := func(systems []*shardmesh.System, msg string, want int) {
		t.Helper()
		for e := range entities {
			got, err := shardmesh.EntityRefFor(systems[e%len(systems)], durableType().Key, fmt.Sprint("c", e)).Ask(ctx, msg)
			if err != nil || got != want {
				t.Fatalf("%s c%d: %d, %v (want %d)", msg, e, got, err, want)
			}
		}
	}
	ask(systems, "inc", 1)
	ask(systems, "inc", 2)
	waitFor(t, "40 live entities", 10*time.Second, func() bool { return liveEntities(t, systems, "durable") == entities })

	// The oldest member, which runs the coordinator, leaves: its entities start again on the
	// others without a message, under epochs of the next coordinator (up-number 2).
	if err := systems[0].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	systems[0].Close()
	waitFor(t, "every remembered entity running on the two left", 20*time.Second, func() bool {
		return liveEntities(t, systems[1:], "durable") == entities
	})
	ask(systems[1:], "inc", 3)

	// Full restart of the two: the same entities run again, with their counts, and take
	// increments — the new cluster numbers its members from 1 again, and its coordinator's
	// epochs must still be above those that fenced the state before (a term from the store).
	for _, s := range systems[1:] {
		s.Close()
	}
	systems = start(dirs[1:]...)
	waitFor(t, "every remembered entity running after a full restart", 30*time.Second, func() bool {
		return liveEntities(t, systems, "durable") == entities
	})
	ask(systems, "get", 3)
	ask(systems, "inc", 4)
}

// TestStateAfterPassivationHoldsEverySave: remembered entities that save on every
// increment and passivate between increments start again on their next message, and each
// new incarnation loads the last save — the load is read early, beside the write that
// remembers the start (node/prefetch.go), and must not be a read from before a save.
func TestStateAfterPassivationHoldsEverySave(t *testing.T) {
	systems := startCluster(t, 3, func(c *config.Config) {
		c.Node.DataDir = t.TempDir()
		c.Membership.MinNrOfMembers = 3
	})
	for _, s := range systems {
		if _, err := shardmesh.Init(s, durableType()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const entities = 30
	for round := 1; round <= 5; round++ {
		for e := range entities {
			ref := shardmesh.EntityRefFor(systems[e%len(systems)], durableType().Key, fmt.Sprint("p", e))
			if got, err := ref.Ask(ctx, "inc"); err != nil || got != round {
				t.Fatalf("round %d: inc p%d: %d, %v (want %d)", round, e, got, err, round)
			}
			if got, err := ref.Ask(ctx, "passivate"); err != nil || got != round {
				t.Fatalf("round %d: passivate p%d: %d, %v", round, e, got, err)
			}
		}
	}
}
