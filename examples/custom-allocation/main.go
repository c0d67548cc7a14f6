// Command custom-allocation shows how to write a shard allocation strategy of your own and
// plug it into shardmesh. Run it with:
//
//	go run ./examples/custom-allocation
//
// # The Strategy interface
//
// A strategy (allocation.Strategy) has two methods, both called by the entity type's
// coordinator with an allocation.View: the regions that can take shards now (each with its
// member's node id, status, app version, age, roles and shards, oldest allocation first),
// the shards whose handoff is in progress, and whether a member is joining or unreachable.
//
//   - Allocate(requester, shard, view) returns the node of the region that gets a shard
//     without a home; requester is the region that asked for it. Return "" to decide later
//     (the coordinator asks again).
//   - Rebalance(view) returns the shards to hand off now. Each is then handed off (its
//     messages are buffered, none is lost) and allocated again with Allocate. Return nothing
//     while view.MemberJoining or view.MemberUnreachable, as the built-in strategies do, and
//     never a shard of view.InProgress.
//
// Both must be quick, must not keep or modify the view, and should be deterministic: the
// same view, the same answer (`shardctl rebalance plan` previews a round with
// allocation.Plan). Operator pins (`shardctl shard move|pin`, System.PinShard) and drains
// are applied by the coordinator around any strategy: a pinned shard is never given to
// Allocate nor moved by Rebalance, and a draining member is not in the view.
//
// Give a strategy to one entity type with shardmesh.Entity's Strategy field; the others
// keep sharding.allocation-strategy (least-shard, consistent-hashing or external).
//
// # This example
//
// PreferRole keeps an entity type's shards on the members with a role ("gpu" here) whenever
// one exists, balanced among them by another strategy, and on any member otherwise. The
// program starts two members without the role and asks 60 entities from them (their shards
// spread over both), then starts a third member with the role: the next rebalance rounds
// move every shard there. All members run in this process and talk over libp2p on
// loopback.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// PreferRole is the custom strategy: shards live on the regions of members with Role when
// there are any, placed and balanced among them by Within; otherwise Within decides over
// every region.
type PreferRole struct {
	Role   string
	Within allocation.Strategy
}

// preferred returns the view restricted to the regions whose member has the role, and
// whether there are any.
func (p PreferRole) preferred(v allocation.View) (allocation.View, bool) {
	sub := v
	sub.Regions = nil
	for _, r := range v.Regions {
		if slices.Contains(r.Roles, p.Role) && r.Status == membership.Up {
			sub.Regions = append(sub.Regions, r)
		}
	}
	return sub, len(sub.Regions) > 0
}

// Allocate gives a new shard to the preferred regions when there are any.
func (p PreferRole) Allocate(requester membership.NodeID, s shard.ID, v allocation.View) membership.NodeID {
	if sub, ok := p.preferred(v); ok {
		return p.Within.Allocate(requester, s, sub)
	}
	return p.Within.Allocate(requester, s, v)
}

// Rebalance hands off every shard held outside the preferred regions once there are any
// (Allocate then puts them on the preferred ones), and otherwise balances as Within does.
func (p PreferRole) Rebalance(v allocation.View) []shard.ID {
	if v.MemberJoining || v.MemberUnreachable {
		return nil // a member will soon want shards, or cannot answer a handoff
	}
	sub, ok := p.preferred(v)
	if !ok || len(sub.Regions) == len(v.Regions) {
		return p.Within.Rebalance(v)
	}
	var picked []shard.ID
	for _, r := range v.Regions {
		if slices.ContainsFunc(sub.Regions, func(x allocation.Region) bool { return x.Node == r.Node }) {
			continue
		}
		for _, s := range r.Shards {
			if !v.InProgress[s] {
				picked = append(picked, s)
			}
		}
	}
	if len(picked) > 0 {
		return picked
	}
	return p.Within.Rebalance(sub)
}

// Job is the example's entity: it counts the work items it was given.
type Job struct{ done int }

// Receive handles one work item and answers with the count.
func (j *Job) Receive(_ *shardmesh.Context, _ string) (int, error) {
	j.done++
	return j.done, nil
}

var jobKey = shardmesh.NewEntityTypeKey[string, int]("job")

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run starts the cluster, places the shards and reports where they went.
func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "shardmesh-custom-allocation")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	within, err := allocation.NewLeastShard(allocation.LeastShardConfig{RebalanceAbsoluteLimit: 100, RebalanceRelativeLimit: 1})
	if err != nil {
		return err
	}
	job := shardmesh.Entity[string, int]{
		Key:          jobKey,
		New:          func(*shardmesh.Context) shardmesh.Behavior[string, int] { return &Job{} },
		MessageCodec: shardmesh.StringCodec{},
		ReplyCodec:   shardmesh.JSONCodec[int]{},
		Strategy:     PreferRole{Role: "gpu", Within: within},
	}
	c := &cluster{root: root, entity: job}
	defer c.close()

	for range 2 {
		if err := c.start(ctx); err != nil {
			return err
		}
	}
	for i := range 60 {
		if _, err := c.regions[i%2].EntityRefFor("job-"+strconv.Itoa(i)).Ask(ctx, "work"); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "two members without the gpu role:")
	if err := c.report(ctx, out); err != nil {
		return err
	}

	if err := c.start(ctx, "gpu"); err != nil {
		return err
	}
	for {
		hosted, err := c.hosted(ctx)
		if err != nil {
			return err
		}
		if hosted[0] == 0 && hosted[1] == 0 && hosted[2] > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the shards did not all move to the gpu member: %v", hosted)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for i := range 60 { // the entities start again on the gpu member
		if _, err := c.regions[0].EntityRefFor("job-"+strconv.Itoa(i)).Ask(ctx, "work"); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "a member with the gpu role joined:")
	return c.report(ctx, out)
}

// cluster is the in-process cluster of the example.
type cluster struct {
	root    string
	entity  shardmesh.Entity[string, int]
	members []*shardmesh.System
	regions []*shardmesh.Region[string, int]
}

// start starts one more member with roles, joined through the first, registers the entity
// type on it and waits until every member sees it Up.
func (c *cluster) start(ctx context.Context, roles ...string) error {
	cfg := config.Default()
	cfg.Node.DataDir = fmt.Sprintf("%s/member-%d", c.root, len(c.members)+1)
	cfg.Node.Roles = roles
	cfg.Sharding.NumberOfShards = 30
	cfg.Sharding.RebalanceInterval = 500 * time.Millisecond
	if len(c.members) > 0 {
		addrs, err := datadir.ReadAddrs(c.members[0].Config().Node.DataDir)
		if err != nil {
			return err
		}
		cfg.Node.Join = addrs[:1]
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	sys, err := shardmesh.Start(ctx, cfg, shardmesh.WithLogger(quiet))
	if err != nil {
		return err
	}
	c.members = append(c.members, sys)
	r, err := shardmesh.Init(sys, c.entity)
	if err != nil {
		return err
	}
	c.regions = append(c.regions, r)
	for {
		ready := true
		for _, m := range c.members {
			up := 0
			for _, mem := range m.Node().View().Members {
				if mem.Status == membership.Up {
					up++
				}
			}
			ready = ready && up == len(c.members)
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %d did not come up: %w", len(c.members), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// hosted counts the shards of the type each member hosts.
func (c *cluster) hosted(ctx context.Context) ([]int, error) {
	out := make([]int, len(c.members))
	for i, m := range c.members {
		state, err := m.Node().RegionState(ctx, jobKey.Name())
		if err != nil {
			return nil, err
		}
		out[i] = len(state)
	}
	return out, nil
}

// report prints the shards and live entities of each member.
func (c *cluster) report(ctx context.Context, out io.Writer) error {
	for i, m := range c.members {
		state, err := m.Node().RegionState(ctx, jobKey.Name())
		if err != nil {
			return err
		}
		entities := 0
		for _, s := range state {
			entities += len(s.Entities)
		}
		fmt.Fprintf(out, "  member %d (roles %v): %d shards, %d live entities\n", i+1, m.Config().Node.Roles, len(state), entities)
	}
	return nil
}

func (c *cluster) close() {
	for _, m := range c.members {
		m.Close()
	}
}
