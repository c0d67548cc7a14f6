package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardmesh/shardmesh"
)

// The built-in entity types, for demos, tests and benchmarks. Their messages are text, so
// shardctl tell/ask can send them as typed.

// counter keeps a number: "inc [n]", "dec [n]", "get"; every reply is the value after.
type counter struct{ n int64 }

func (c *counter) Receive(_ *shardmesh.Context, msg string) (int64, error) {
	op, arg, _ := strings.Cut(strings.TrimSpace(msg), " ")
	by := int64(1)
	if arg != "" {
		v, err := strconv.ParseInt(strings.TrimSpace(arg), 10, 64)
		if err != nil {
			return c.n, fmt.Errorf("counter: %q is not a number", arg)
		}
		by = v
	}
	switch op {
	case "inc":
		c.n += by
	case "dec":
		c.n -= by
	case "get":
	default:
		return c.n, fmt.Errorf("counter: unknown command %q (inc [n], dec [n], get)", op)
	}
	return c.n, nil
}

// echo answers with what it got, and where it lives.
type echo struct{}

func (echo) Receive(ctx *shardmesh.Context, msg string) (string, error) {
	return fmt.Sprintf("%s (entity %s, shard %s)", msg, ctx.EntityID(), ctx.ShardID()), nil
}

// builtinTypes registers the named built-in entity types.
func builtinTypes(sys *shardmesh.System, names []string) error {
	for _, name := range names {
		var err error
		switch name {
		case "counter":
			_, err = shardmesh.Init(sys, shardmesh.Entity[string, int64]{
				Key:          shardmesh.NewEntityTypeKey[string, int64]("counter"),
				New:          func(*shardmesh.Context) shardmesh.Behavior[string, int64] { return &counter{} },
				MessageCodec: shardmesh.StringCodec{},
				ReplyCodec:   shardmesh.JSONCodec[int64]{},
			})
		case "echo":
			_, err = shardmesh.Init(sys, shardmesh.Entity[string, string]{
				Key:          shardmesh.NewEntityTypeKey[string, string]("echo"),
				New:          func(*shardmesh.Context) shardmesh.Behavior[string, string] { return echo{} },
				MessageCodec: shardmesh.StringCodec{},
				ReplyCodec:   shardmesh.StringCodec{},
			})
		default:
			return fmt.Errorf("entity-types: unknown built-in type %q (counter, echo)", name)
		}
		if err != nil {
			return fmt.Errorf("entity type %s: %w", name, err)
		}
	}
	return nil
}
