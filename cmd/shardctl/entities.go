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
spaces) and prints the reply as text. The reply waits at most --timeout.

Example, with the daemon's built-in counter type:
   shardctl ask --data-dir /tmp/a counter user-42 inc
   shardctl ask --data-dir /tmp/a counter user-42 get --json`,
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

// entityArgs reads TYPE ENTITY_ID MESSAGE... with one-line usage errors.
func entityArgs(c *cli.Context) (typ, id, msg string, err error) {
	args := c.Args().Slice()
	if len(args) < 3 {
		return "", "", "", cli.Exit(fmt.Sprintf("%s needs TYPE ENTITY_ID MESSAGE... (got %d arguments; see 'shardctl %s --help')", c.Command.Name, len(args), c.Command.Name), exitUsage)
	}
	if err := admin.CheckTypeName(args[0]); err != nil {
		return "", "", "", cmdline.Usagef("TYPE: %v", err)
	}
	if err := admin.CheckEntityID(args[1]); err != nil {
		return "", "", "", cmdline.Usagef("ENTITY_ID: %v", err)
	}
	words := args[2:]
	if len(words) > 0 && words[0] == "--" {
		words = words[1:] // everything after -- is the message, even words that look like flags
	} else {
		for _, a := range words {
			if name, ok := strings.CutPrefix(a, "--"); ok && isFlag(c, name) {
				return "", "", "", cli.Exit(fmt.Sprintf("%s looks like a flag after the message: put flags before TYPE (shardctl %s %s %s ...), or write -- before a message that starts with it", a, c.Command.Name, a, args[0]), exitUsage)
			}
		}
	}
	return args[0], args[1], strings.Join(words, " "), nil
}

// isFlag reports whether name (without dashes, possibly with =value) is a flag of the command.
func isFlag(c *cli.Context, name string) bool {
	name, _, _ = strings.Cut(name, "=")
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
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
			if c.NArg() == 0 {
				return cli.Exit("shard-id needs at least one ENTITY_ID (see 'shardctl shard-id --help')", exitUsage)
			}
			var ex shard.Extractor
			var err error
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
			for _, id := range c.Args().Slice() {
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
