package node

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// testLog sends a member's logs to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

type echoBehavior struct{}

func (echoBehavior) Receive(_ *EntityContext, msg any) (any, error) { return msg, nil }

// TestAdminQueries: a member of one answers the read-only admin queries from its loop.
func TestAdminQueries(t *testing.T) {
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	n, err := Start(context.Background(), Config{DataDir: t.TempDir(), Membership: membership.DefaultConfig(), TickInterval: 10 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ex, err := shard.NewHashCodeExtractor(10)
	if err != nil {
		t.Fatal(err)
	}
	id := func(v any) ([]byte, error) { return []byte(v.(string)), nil }
	un := func(b []byte) (any, error) { return string(b), nil }
	if err := n.RegisterType(EntityType{Name: "echo", Extractor: ex,
		Settings:      engine.TypeConfig{Coordinator: coordinator.DefaultConfig("echo"), Region: region.DefaultConfig("echo")},
		New:           func(*EntityContext) Behavior { return echoBehavior{} },
		EncodeMessage: id, DecodeMessage: un, EncodeReply: id, DecodeReply: un}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Ask(ctx, "echo", "e1", "hi"); err != nil {
		t.Fatal(err)
	}
	if err := n.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := n.ShardOf("echo", "e1")
	if err != nil || s != ex.ShardID("e1") {
		t.Fatalf("shard of e1: %v %v", s, err)
	}
	if _, err := n.ShardOf("nope", "e1"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	st, err := n.LocalStats(ctx, []string{"echo", "nope"}, true)
	if err != nil || st.Status != membership.Up || !st.Serving || len(st.Regions) != 1 {
		t.Fatalf("stats: %+v %v", st, err)
	}
	r := st.Regions[0]
	if !r.Registered || !r.CoordinatorHere || len(r.Shards) != 1 || r.Shards[0].Shard != s || r.Shards[0].Entities != 1 ||
		len(r.Allocations[n.ID()]) != 1 {
		t.Errorf("region: %+v", r)
	}
	info, err := n.ShardInfo(ctx, "echo", s, "e1")
	if err != nil || !info.CoordinatorHere || !info.Allocated || info.Home != n.ID() || !info.Hosted || info.LocalEpoch != info.Epoch ||
		!info.Alive || info.EntityState != shard.Running {
		t.Errorf("shard info: %+v %v", info, err)
	}
	if info, _ := n.ShardInfo(ctx, "echo", s, "e2"); info.Alive {
		t.Errorf("an entity never sent to is alive: %+v", info)
	}
	if _, err := n.ShardInfo(ctx, "nope", s, ""); !errors.Is(err, ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	n.Close()
	if err := n.Ping(context.Background()); !errors.Is(err, ErrStopped) {
		t.Errorf("ping after close: %v", err)
	}
}

// TestReadDirectives: ReadDirectives reads the directives from the store when called, so a
// member that just started answers with them (its own copy may not be read yet), and a
// change stored before the call is in the answer.
func TestReadDirectives(t *testing.T) {
	n, err := Start(context.Background(), Config{DataDir: t.TempDir(), Membership: membership.DefaultConfig(), TickInterval: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testLog{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := n.ReadDirectives(ctx)
	if err != nil || len(d.Pins) != 0 {
		t.Fatalf("directives of a new member: %+v %v", d, err)
	}
	if _, known, _ := n.Directives(ctx); !known {
		t.Error("directives read, yet not known")
	}
	if err := n.ChangeDirective(ctx, DirectiveChange{Kind: directivePin, Type: "echo", Shard: "3", Node: n.ID()}); err != nil {
		t.Fatal(err)
	}
	d, err = n.ReadDirectives(ctx)
	if err != nil || d.Pins["echo"]["3"] != n.ID() {
		t.Fatalf("directives after a pin: %+v %v", d, err)
	}
}
