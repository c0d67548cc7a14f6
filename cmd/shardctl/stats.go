package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// statsJSON is stats --json.
type statsJSON struct {
	Node        string            `json:"node"` // the member that asked the others
	EntityTypes []string          `json:"entity_types"`
	TimeoutMs   uint64            `json:"timeout_ms"`
	Complete    bool              `json:"complete"` // every member answered
	Regions     []statsRegionJSON `json:"regions"`
	Failed      []statsFailedJSON `json:"failed"`
	Totals      []statsTotalJSON  `json:"totals"`
}

type statsRegionJSON struct {
	Node            string            `json:"node"`
	EntityType      string            `json:"entity_type"`
	Status          string            `json:"status"`
	Proxy           bool              `json:"proxy"`
	Registered      bool              `json:"registered"`
	CoordinatorHere bool              `json:"coordinator_here"`
	Buffered        uint64            `json:"buffered"`
	Shards          int               `json:"shards"`
	Entities        uint64            `json:"entities"`
	ShardEntities   map[string]uint64 `json:"shard_entities"` // live entities per shard
	// What the member holds of the type's shards as a replica of their replica sets (its
	// own shards and others'): units (shards), live records, tombstones.
	HeldUnits      uint32 `json:"held_units"`
	HeldRecords    uint64 `json:"held_records"`
	HeldTombstones uint64 `json:"held_tombstones"`
}

type statsFailedJSON struct {
	Node   string                  `json:"node"`
	Error  string                  `json:"error"`
	Shards []statsFailedShardsJSON `json:"shards"`
}

type statsFailedShardsJSON struct {
	EntityType string   `json:"entity_type"`
	Shards     []string `json:"shards"`  // allocated there, by the coordinator
	Unknown    bool     `json:"unknown"` // no coordinator of the type answered
}

type statsTotalJSON struct {
	EntityType       string `json:"entity_type"`
	Shards           int    `json:"shards"`             // in the regions that answered
	Entities         uint64 `json:"entities"`           // in the regions that answered
	Members          int    `json:"members"`            // that answered
	HeldRecords      uint64 `json:"held_records"`       // records on the replicas that answered (each held by several)
	UnansweredShards int    `json:"unanswered_shards"`  // known to be on members that did not answer
	UnknownShards    bool   `json:"unanswered_unknown"` // members did not answer and no coordinator said what they host
}

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:  "stats",
		Usage: "shards and live entities of every member's regions (GetClusterShardingStats)",
		Description: `Asks the member to query every member's regions at once, each within the
shard-region-query-timeout (3 s by default, --query-timeout to change it), and prints the
shards and live entities per member, and what each member holds of the type's shards as a
replica (REPLICA OF: the shards it holds records of, its own and others', each kept on
sharding.store.replication-factor members; RECORDS: remembered entities and entity states,
with tombstones in parentheses). Members that did not answer are listed, with the shards
the coordinator places on them, and the exit code is 3: the totals are never silently
smaller than the truth.
Example:
   shardctl stats --data-dir /tmp/a
   shardctl stats --data-dir /tmp/a --type counter --json`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "type", Usage: "only entity type `T` (repeatable)"},
			&cli.DurationFlag{Name: "query-timeout", Usage: "bound of each member's answer (default: the member's shard-region-query-timeout)"},
		},
		Action: func(c *cli.Context) error {
			types, err := typeFlags(c)
			if err != nil {
				return err
			}
			if err := cmdline.PositiveFlag(c, "query-timeout"); err != nil {
				return err
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			st, err := s.cl.Stats(s.ctx, types, c.Duration("query-timeout"))
			if err != nil {
				return callError(err)
			}
			out := statsView(st)
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printStats(c.App.Writer, out)
			}
			if !out.Complete {
				return cli.Exit(fmt.Sprintf("partial result: %d member(s) did not answer within %v", len(out.Failed), time.Duration(out.TimeoutMs)*time.Millisecond), exitPartial)
			}
			return nil
		},
	}
}

func statsView(st *adminpb.StatsResponse) statsJSON {
	out := statsJSON{Node: st.Node, EntityTypes: st.EntityTypes, TimeoutMs: st.TimeoutMs, Complete: len(st.Failed) == 0,
		Regions: []statsRegionJSON{}, Failed: []statsFailedJSON{}}
	totals := map[string]*statsTotalJSON{}
	for _, t := range st.EntityTypes {
		totals[t] = &statsTotalJSON{EntityType: t}
	}
	for _, m := range st.Members {
		for _, r := range m.Regions {
			rj := statsRegionJSON{Node: m.Node, EntityType: r.EntityType, Status: m.Status, Proxy: r.Proxy, Registered: r.Registered,
				CoordinatorHere: r.CoordinatorHere, Buffered: r.Buffered, Shards: len(r.Shards), ShardEntities: map[string]uint64{},
				HeldUnits: r.GetHolding().GetUnits(), HeldRecords: r.GetHolding().GetRecords(), HeldTombstones: r.GetHolding().GetTombstones()}
			for _, sh := range r.Shards {
				rj.Entities += sh.Entities
				rj.ShardEntities[sh.Shard] = sh.Entities
			}
			out.Regions = append(out.Regions, rj)
			if t := totals[r.EntityType]; t != nil {
				t.Shards += rj.Shards
				t.Entities += rj.Entities
				t.Members++
				t.HeldRecords += rj.HeldRecords
			}
		}
	}
	slices.SortStableFunc(out.Regions, func(a, b statsRegionJSON) int { return strings.Compare(a.EntityType, b.EntityType) })
	for _, f := range st.Failed {
		fj := statsFailedJSON{Node: f.Node, Error: f.Error, Shards: []statsFailedShardsJSON{}}
		for _, ts := range f.Shards {
			fj.Shards = append(fj.Shards, statsFailedShardsJSON{EntityType: ts.EntityType, Shards: append([]string{}, ts.Shards...), Unknown: ts.Unknown})
			if t := totals[ts.EntityType]; t != nil {
				t.UnansweredShards += len(ts.Shards)
				t.UnknownShards = t.UnknownShards || ts.Unknown
			}
		}
		out.Failed = append(out.Failed, fj)
	}
	for _, t := range st.EntityTypes {
		out.Totals = append(out.Totals, *totals[t])
	}
	return out
}

func printStats(w io.Writer, out statsJSON) {
	t := cmdline.NewTable(w, "TYPE", "MEMBER", "STATUS", "SHARDS", "ENTITIES", "BUFFERED", "REPLICA OF", "RECORDS", "")
	for _, r := range out.Regions {
		var notes []string
		if r.CoordinatorHere {
			notes = append(notes, "coordinator")
		}
		if r.Proxy {
			notes = append(notes, "proxy")
		}
		if !r.Registered {
			notes = append(notes, "not registered")
		}
		if r.Node == out.Node {
			notes = append(notes, "(answering)")
		}
		t.Row(r.EntityType, cmdline.ShortID(r.Node), r.Status, strconv.Itoa(r.Shards), strconv.FormatUint(r.Entities, 10), strconv.FormatUint(r.Buffered, 10),
			cmdline.Plural(int(r.HeldUnits), "shard", "shards"), heldRecords(r), strings.Join(notes, " "))
	}
	t.Flush()
	if len(out.Failed) > 0 {
		fmt.Fprintf(w, "\nDID NOT ANSWER within %v:\n", time.Duration(out.TimeoutMs)*time.Millisecond)
		t := cmdline.NewTable(w, "MEMBER", "TYPE", "SHARDS THERE", "ERROR")
		for _, f := range out.Failed {
			for _, s := range f.Shards {
				there := "unknown (no coordinator answered)"
				if !s.Unknown {
					there = fmt.Sprintf("%d: %s", len(s.Shards), listSome(s.Shards, 8, len(s.Shards)))
				}
				t.Row(cmdline.ShortID(f.Node), s.EntityType, there, f.Error)
			}
			if len(f.Shards) == 0 {
				t.Row(cmdline.ShortID(f.Node), "-", "-", f.Error)
			}
		}
		t.Flush()
		fmt.Fprintln(w)
	}
	for _, tot := range out.Totals {
		line := fmt.Sprintf("%s: %d shards, %d live entities on %d members; %d records on their replicas", tot.EntityType, tot.Shards, tot.Entities, tot.Members, tot.HeldRecords)
		switch {
		case tot.UnknownShards:
			line += fmt.Sprintf("; plus the shards of %d member(s) that did not answer (how many is unknown)", len(out.Failed))
		case len(out.Failed) > 0:
			line += fmt.Sprintf("; plus %d shards on member(s) that did not answer (entities unknown)", tot.UnansweredShards)
		}
		fmt.Fprintln(w, line)
	}
}

// heldRecords is a member's records of a type as a replica, tombstones apart.
func heldRecords(r statsRegionJSON) string {
	if r.HeldTombstones == 0 {
		return strconv.FormatUint(r.HeldRecords, 10)
	}
	return fmt.Sprintf("%d (+%d tombstones)", r.HeldRecords, r.HeldTombstones)
}
