package shardmesh_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh"
)

// An incarnation knows the member it runs on and the allocation epoch it started with.
func TestContextNodeAndEpoch(t *testing.T) {
	sys := startCluster(t, 1, nil)[0]
	r, err := shardmesh.Init(sys, shardmesh.Entity[string, string]{
		Key: shardmesh.NewEntityTypeKey[string, string]("where"),
		New: func(*shardmesh.Context) shardmesh.Behavior[string, string] {
			return shardmesh.BehaviorFunc[string, string](func(ctx *shardmesh.Context, _ string) (string, error) {
				return fmt.Sprintf("%s %d", ctx.Node(), ctx.Epoch()), nil
			})
		},
		MessageCodec: shardmesh.StringCodec{},
		ReplyCodec:   shardmesh.StringCodec{},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := r.EntityRefFor("a").Ask(ctx, "?")
	if err != nil {
		t.Fatal(err)
	}
	var node string
	var epoch uint64
	if _, err := fmt.Sscanf(got, "%s %d", &node, &epoch); err != nil {
		t.Fatalf("reply %q: %v", got, err)
	}
	if node != string(sys.Node().ID()) || epoch>>32 == 0 {
		t.Fatalf("node %s epoch %d (term %d), want node %s and a term ≥ 1", node, epoch, epoch>>32, sys.Node().ID())
	}
}
