package main

import (
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// regionStateJSON is one region in region-state --json.
type regionStateJSON struct {
	Node       string           `json:"node"`
	EntityType string           `json:"entity_type"`
	Proxy      bool             `json:"proxy"`
	Truncated  bool             `json:"truncated"` // some entity lists were cut short; counts stay exact
	Shards     []shardStateJSON `json:"shards"`
}

type shardStateJSON struct {
	Shard    string   `json:"shard"`
	Entities uint64   `json:"entities"`
	Stopping bool     `json:"stopping"`
	IDs      []string `json:"ids"`
}

func regionStateCommand() *cli.Command {
	return &cli.Command{
		Name:  "region-state",
		Usage: "list the shards of a member's regions and the live entities in each (GetShardRegionState)",
		Description: `Lists the shards the member hosts, per entity type (--type, or every type it runs), with
their live entities. Only that member is asked: for the whole cluster, see shardctl stats.
A shard handing off is marked stopping.
Example:
   shardctl region-state --data-dir /tmp/a --type counter
   shardctl region-state --data-dir /tmp/a --node …Xy3kLm9q --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Usage: "only entity type `T`"},
			&cli.IntFlag{Name: "ids", Value: 5, Usage: "entity ids to show per shard in the table (`N`; --json lists all)"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			if n := c.Int("ids"); n < 0 {
				return cmdline.Usagef("--ids %d: must be 0 or more", n)
			}
			if t := c.String("type"); c.IsSet("type") {
				if err := admin.CheckTypeName(t); err != nil {
					return cmdline.Usagef("--type: %v", err)
				}
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			types := []string{c.String("type")}
			if !c.IsSet("type") {
				if types, err = s.cl.Types(s.ctx); err != nil {
					return callError(err)
				}
			}
			var out []regionStateJSON
			for _, typ := range types {
				st, err := s.cl.RegionState(s.ctx, typ)
				if err != nil {
					return callError(err)
				}
				r := regionStateJSON{Node: st.Node, EntityType: typ, Proxy: st.Proxy, Truncated: st.Truncated, Shards: []shardStateJSON{}}
				for _, sh := range st.Shards {
					r.Shards = append(r.Shards, shardStateJSON{Shard: sh.Shard, Entities: sh.EntityCount, Stopping: sh.Stopping, IDs: append([]string{}, sh.Entities...)})
				}
				out = append(out, r)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, out)
			}
			t := cmdline.NewTable(c.App.Writer, "TYPE", "SHARD", "ENTITIES", "STATE", "ENTITY IDS")
			for _, r := range out {
				for _, sh := range r.Shards {
					state := "active"
					if sh.Stopping {
						state = "stopping"
					}
					t.Row(r.EntityType, sh.Shard, strconv.FormatUint(sh.Entities, 10), state, listSome(sh.IDs, c.Int("ids"), int(sh.Entities)))
				}
			}
			t.Flush()
			for _, r := range out {
				var n uint64
				for _, sh := range r.Shards {
					n += sh.Entities
				}
				note := ""
				if r.Proxy {
					note = " (proxy: this member does not host the type)"
				}
				fmt.Fprintf(c.App.Writer, "member %s, %s: %d shards, %d live entities%s\n", cmdline.ShortID(r.Node), r.EntityType, len(r.Shards), n, note)
			}
			return nil
		},
	}
}
