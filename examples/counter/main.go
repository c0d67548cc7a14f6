// Command counter is a runnable example of shardmesh: it starts a cluster of three members
// in one process (each with its own data directory, talking over libp2p on loopback),
// registers a counter entity type on each, increments 100 counters from all three members,
// and shows where the shards live. Run it with:
//
//	go run ./examples/counter
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/datadir"
)

// Command is a counter's message.
type Command struct {
	Op string `json:"op"` // "inc" or "get"
	By int    `json:"by,omitempty"`
}

// Counter is the entity: one per id, anywhere in the cluster, one message at a time.
type Counter struct{ value int }

// Receive handles one command and replies with the value.
func (c *Counter) Receive(_ *shardmesh.Context, cmd Command) (int, error) {
	switch cmd.Op {
	case "inc":
		c.value += max(cmd.By, 1)
	case "get":
	default:
		return 0, fmt.Errorf("unknown op %q", cmd.Op)
	}
	return c.value, nil
}

var counterKey = shardmesh.NewEntityTypeKey[Command, int]("counter")

func counterEntity() shardmesh.Entity[Command, int] {
	return shardmesh.Entity[Command, int]{
		Key:          counterKey,
		New:          func(*shardmesh.Context) shardmesh.Behavior[Command, int] { return &Counter{} },
		MessageCodec: shardmesh.JSONCodec[Command]{},
		ReplyCodec:   shardmesh.JSONCodec[int]{},
	}
}

func main() {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	root, err := os.MkdirTemp("", "shardmesh-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	var members []*shardmesh.System
	var regions []*shardmesh.Region[Command, int]
	for i := range 3 {
		cfg := config.Default()
		cfg.Node.DataDir = fmt.Sprintf("%s/member-%d", root, i+1)
		cfg.Sharding.NumberOfShards = 30
		if i > 0 { // join through the first member
			addrs, err := datadir.ReadAddrs(members[0].Config().Node.DataDir)
			if err != nil {
				log.Fatal(err)
			}
			cfg.Node.Join = addrs[:1]
		}
		sys, err := shardmesh.Start(ctx, cfg, shardmesh.WithLogger(quiet))
		if err != nil {
			log.Fatal(err)
		}
		defer sys.Close()
		r, err := shardmesh.Init(sys, counterEntity())
		if err != nil {
			log.Fatal(err)
		}
		members, regions = append(members, sys), append(regions, r)
	}
	waitUp(members)

	askCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i, r := range regions { // every member increments every counter
		for c := range 100 {
			if _, err := r.EntityRefFor("counter-"+strconv.Itoa(c)).Ask(askCtx, Command{Op: "inc", By: i + 1}); err != nil {
				log.Fatal(err)
			}
		}
	}
	v, err := shardmesh.EntityRefFor(members[2], counterKey, "counter-42").Ask(askCtx, Command{Op: "get"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("counter-42 = %d (1 + 2 + 3 from three members)\n", v)
	for i, m := range members {
		state, err := m.Node().RegionState(askCtx, "counter")
		if err != nil {
			log.Fatal(err)
		}
		entities := 0
		for _, s := range state {
			entities += len(s.Entities)
		}
		fmt.Printf("member %d hosts %d shards with %d live counters\n", i+1, len(state), entities)
	}
}

// waitUp waits until every member sees all three Up.
func waitUp(members []*shardmesh.System) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ready := true
		for _, m := range members {
			up := 0
			for _, mem := range m.Node().View().Members {
				if mem.Status.String() == "Up" {
					up++
				}
			}
			ready = ready && up == len(members)
		}
		if ready {
			return
		}
	}
	log.Fatal("members did not come up")
}
