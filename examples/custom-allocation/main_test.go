package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

func TestPreferRole(t *testing.T) {
	within, err := allocation.NewLeastShard(allocation.LeastShardConfig{RebalanceAbsoluteLimit: 100, RebalanceRelativeLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := PreferRole{Role: "gpu", Within: within}
	v := allocation.View{Regions: []allocation.Region{
		{Node: "a", Status: membership.Up, UpNumber: 1, Shards: []shard.ID{"1", "2", "3"}},
		{Node: "b", Status: membership.Up, UpNumber: 2, Shards: []shard.ID{"4"}},
	}}
	if got := p.Allocate("a", "9", v); got != "b" {
		t.Errorf("without a gpu member, shard 9 went to %s, want b (fewest shards)", got)
	}
	v.Regions = append(v.Regions, allocation.Region{Node: "g", Status: membership.Up, UpNumber: 3, Roles: []string{"gpu"}})
	if got := p.Allocate("a", "9", v); got != "g" {
		t.Errorf("with a gpu member, shard 9 went to %s, want g", got)
	}
	moves := allocation.Plan(p, v)
	if len(moves) != 4 {
		t.Fatalf("plan %+v: want the 4 shards moved", moves)
	}
	for _, m := range moves {
		if m.To != "g" {
			t.Errorf("shard %s goes to %s, want g", m.Shard, m.To)
		}
	}
	v.MemberJoining = true
	if got := p.Rebalance(v); len(got) != 0 {
		t.Errorf("rebalanced %v while a member is joining", got)
	}
}

// TestRun runs the example program: two members, then a gpu member takes every shard.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"member 1 (roles []): 0 shards, 0 live entities",
		"member 2 (roles []): 0 shards, 0 live entities",
		"member 3 (roles [gpu]): ",
		"60 live entities",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
