package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// locateJSON is locate --json.
type locateJSON struct {
	EntityType  string   `json:"entity_type"`
	Entity      string   `json:"entity"`
	Shard       string   `json:"shard"`
	Allocated   bool     `json:"allocated"`
	Home        string   `json:"home"`
	Epoch       string   `json:"epoch"`
	Source      string   `json:"source"`
	Coordinator string   `json:"coordinator"`
	Alive       *bool    `json:"alive"` // null: unknown (the home did not answer)
	EntityState string   `json:"entity_state"`
	Complete    bool     `json:"complete"`
	Problems    []string `json:"problems"`
}

func locateCommand() *cli.Command {
	return &cli.Command{
		Name:      "locate",
		Usage:     "find an entity: its shard, the shard's home member and epoch, and whether it is alive",
		ArgsUsage: "TYPE ENTITY_ID",
		Description: `Prints the shard of entity ENTITY_ID of type TYPE (by the type's extractor), the member
the coordinator allocated the shard to and the allocation's epoch, and whether the entity
runs there now. Nothing is started or allocated: a shard no message has reached has no home
yet. When the coordinator or the home does not answer, what is known is printed and the
exit code is 3; whether the entity is alive is then "unknown" (null in --json), never "no".
Example:
   shardctl locate --data-dir /tmp/a counter user-42
   shardctl locate --data-dir /tmp/a counter user-42 --json`,
		Action: func(c *cli.Context) error {
			args, err := cmdline.Positional(c, "TYPE ENTITY_ID", 2)
			if err != nil {
				return err
			}
			typ, id := args[0], args[1]
			if err := admin.CheckTypeName(typ); err != nil {
				return cmdline.Usagef("TYPE: %v", err)
			}
			if err := admin.CheckEntityID(id); err != nil {
				return cmdline.Usagef("ENTITY_ID: %v", err)
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			l, err := s.cl.Locate(s.ctx, typ, id)
			if err != nil {
				return callError(err)
			}
			out := locateJSON{EntityType: l.EntityType, Entity: l.Entity, Shard: l.Shard, Allocated: l.Allocated, Home: l.Home,
				Source: l.Source, Coordinator: l.Coordinator, EntityState: l.EntityState,
				Complete: len(l.Problems) == 0, Problems: append([]string{}, l.Problems...)}
			if l.Allocated {
				out.Epoch = epoch(l.Epoch)
			}
			if l.AliveKnown {
				out.Alive = &l.Alive
			}
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printLocation(c, out)
			}
			if !out.Complete {
				return cli.Exit("partial result: "+strings.Join(out.Problems, "; "), exitPartial)
			}
			return nil
		},
	}
}

func printLocation(c *cli.Context, l locateJSON) {
	t := cmdline.NewTable(c.App.Writer)
	t.Row("entity", l.EntityType+" "+l.Entity)
	t.Row("shard", l.Shard)
	switch {
	case l.Allocated:
		t.Row("home", cmdline.ShortID(l.Home)+"  ("+l.Home+")")
		t.Row("epoch", l.Epoch+"  (from the "+l.Source+")")
		alive := "unknown (the home did not answer)"
		switch {
		case l.Alive == nil:
		case *l.Alive:
			alive = "yes (" + l.EntityState + ")"
		default:
			alive = "no (it starts on its next message)"
		}
		t.Row("alive", alive)
	case l.Complete:
		t.Row("home", "none yet: no message has reached the shard (the next one allocates it)")
	default:
		t.Row("home", "unknown")
	}
	t.Row("coordinator", cmdline.OrDash(cmdline.ShortID(l.Coordinator)))
	t.Flush()
	for _, p := range l.Problems {
		fmt.Fprintln(c.App.Writer, "not answered: "+p)
	}
}
