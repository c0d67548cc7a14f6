package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/shard"
)

func tellCommand() *cli.Command {
	return &cli.Command{
		Name:      "tell",
		Usage:     "send a message to an entity, without waiting",
		ArgsUsage: "TYPE ENTITY_ID MESSAGE...",
		Description: `Sends MESSAGE (the remaining arguments joined by spaces, as the entity type's codec
reads text) to entity ENTITY_ID of entity type TYPE, through the member named by --node.

Example, with the daemon's built-in counter type (sharddaemon --entity-types counter):
   shardctl tell --data-dir /tmp/a counter user-42 inc 5`,
		Action: func(c *cli.Context) error {
			typ, id, msg, err := entityArgs(c)
			if err != nil {
				return err
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			cl, ctx := s.cl, s.ctx
			if err := cl.Tell(ctx, typ, id, []byte(msg)); err != nil {
				return callError(err)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, map[string]any{"type": typ, "entity": id, "sent": true})
			}
			return nil
		},
	}
}

func askCommand() *cli.Command {
	return &cli.Command{
		Name:      "ask",
		Usage:     "send a message to an entity and print its reply",
		ArgsUsage: "TYPE ENTITY_ID MESSAGE...",
		Description: `Asks entity ENTITY_ID of entity type TYPE with MESSAGE (the remaining arguments joined by
spaces) and prints the reply as text. The reply waits at most --timeout (up to 10m).
Flags may come after the arguments; after -- every word is part of the message.

Example, with the daemon's built-in counter type:
   shardctl ask --data-dir /tmp/a counter user-42 inc
   shardctl ask --data-dir /tmp/a counter user-42 get --json`,
		Action: func(c *cli.Context) error {
			typ, id, msg, err := entityArgs(c)
			if err != nil {
				return err
			}
			if d := c.Duration("timeout"); d > admin.MaxAskTimeout {
				return cmdline.Usagef("--timeout %v: an ask waits at most %v for its reply", d, admin.MaxAskTimeout)
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			cl, ctx := s.cl, s.ctx
			reply, err := cl.Ask(ctx, typ, id, []byte(msg))
			if err != nil {
				return callError(err)
			}
			if c.Bool("json") {
				out := map[string]any{"type": typ, "entity": id}
				switch {
				case json.Valid(reply):
					out["reply"] = json.RawMessage(reply)
				case utf8.Valid(reply):
					out["reply"] = string(reply)
				default:
					out["reply_bytes"] = reply
				}
				return cmdline.PrintJSON(c.App.Writer, out)
			}
			fmt.Fprintln(c.App.Writer, string(reply))
			return nil
		},
	}
}

// entityArgs reads TYPE ENTITY_ID MESSAGE... with one-line usage errors. Flags may come
// among them ("ask counter u1 inc --timeout 5s"); after "--" every word is an argument, so
// "ask echo -- -x hello" asks entity "-x" and "ask counter u1 -- --json" sends "--json".
func entityArgs(c *cli.Context) (typ, id, msg string, err error) {
	args, err := cmdline.Positional(c, "TYPE ENTITY_ID MESSAGE...", -3)
	if err != nil {
		return "", "", "", err
	}
	if err := admin.CheckTypeName(args[0]); err != nil {
		return "", "", "", cmdline.Usagef("TYPE: %v", err)
	}
	if err := admin.CheckEntityID(args[1]); err != nil {
		return "", "", "", cmdline.Usagef("ENTITY_ID: %v", err)
	}
	return args[0], args[1], strings.Join(args[2:], " "), nil
}

func shardIDCommand() *cli.Command {
	return &cli.Command{
		Name:      "shard-id",
		Usage:     "print the shard of entity ids, as Akka's HashCodeMessageExtractor computes it",
		ArgsUsage: "ENTITY_ID...",
		Description: `Prints the shard id of each ENTITY_ID: abs(Java String.hashCode) % number-of-shards,
byte-identical to Akka's HashCodeMessageExtractor (so entities land in the same shards as in
an Akka cluster), or with --shardcake Shardcake's abs(hashCode % n) + 1. Needs no cluster.

Example:
   shardctl shard-id user-1 user-2
   shardctl shard-id --shards 100 --json user-1`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shards", Usage: "number-of-shards", Value: 1000},
			&cli.BoolFlag{Name: "shardcake", Usage: "use Shardcake's formula instead of Akka's"},
		},
		Action: func(c *cli.Context) error {
			ids, err := cmdline.Positional(c, "at least one ENTITY_ID", -1)
			if err != nil {
				return err
			}
			var ex shard.Extractor
			if c.Bool("shardcake") {
				ex, err = shard.NewShardcakeExtractor(c.Int("shards"))
			} else {
				ex, err = shard.NewHashCodeExtractor(c.Int("shards"))
			}
			if err != nil {
				return cli.Exit("--shards: "+err.Error(), exitUsage)
			}
			type row struct {
				Entity string `json:"entity"`
				Shard  string `json:"shard"`
			}
			var rows []row
			for _, id := range ids {
				rows = append(rows, row{Entity: id, Shard: string(ex.ShardID(shard.EntityID(id)))})
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, rows)
			}
			for _, r := range rows {
				fmt.Fprintf(c.App.Writer, "%s\t%s\n", r.Entity, r.Shard)
			}
			return nil
		},
	}
}

func typesCommand() *cli.Command {
	return &cli.Command{
		Name:        "types",
		Usage:       "list the entity types a member runs; stop or start one cluster-wide",
		Subcommands: typesServiceCommands(),
		Description: `Lists the entity type names registered on the member (Akka's shardTypeNames).

Example:
   shardctl types --data-dir /tmp/a`,
		Action: func(c *cli.Context) error {
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			cl, ctx := s.cl, s.ctx
			names, err := cl.Types(ctx)
			if err != nil {
				return callError(err)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, names)
			}
			for _, n := range names {
				fmt.Fprintln(c.App.Writer, n)
			}
			return nil
		},
	}
}
