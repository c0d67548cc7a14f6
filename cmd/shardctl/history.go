package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// historyJSON is one record of history --json.
type historyJSON struct {
	At          string `json:"at"`
	Type        string `json:"type"`
	Shard       string `json:"shard"`
	From        string `json:"from"`
	To          string `json:"to"`
	Epoch       string `json:"epoch"`
	Cause       string `json:"cause"`
	HandoffMs   uint64 `json:"handoff_ms"`
	Entities    uint32 `json:"entities"`
	Coordinator string `json:"coordinator"`
}

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:  "history",
		Usage: "where shards have been and why (the placement history)",
		Description: `Prints the placement history: every allocation change the coordinators made, kept in the
replicated store (sharding.placement-history.max-per-shard records per shard, for
sharding.placement-history.retention): when, shard, from, to, epoch, cause — new,
rebalance, graceful-shutdown, drain, operator-move, type-stopped, member-downed,
member-left, member-removed, member-restarted, conflict — the handoff's duration and the
entities it stopped. Oldest first; --limit keeps the newest. The history is cluster
metadata, read from a majority of the members that hold it; when no majority answers, the
copies of those that do (the member asked included) are printed, possibly stale, a line
names the members missing, and the exit code is 3 (a partial result).
Example:
   shardctl history --data-dir /tmp/a --type counter --shard 17
   shardctl history --data-dir /tmp/a --since 1h --json`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "type", Usage: "only entity type `T` (repeatable)"},
			&cli.StringFlag{Name: "shard", Usage: "only shard `S`"},
			&cli.DurationFlag{Name: "since", Usage: "only records of the last `D` (e.g. 30m)"},
			&cli.IntFlag{Name: "limit", Value: 1000, Usage: "at most `N` records (the newest)"},
		},
		Action: func(c *cli.Context) error {
			types, err := typeFlags(c) // also: no positional arguments
			if err != nil {
				return err
			}
			since, err := sinceAndLimit(c)
			if err != nil {
				return err
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			h, err := s.cl.History(s.ctx, types, c.String("shard"), since, c.Int("limit"))
			if err != nil {
				return callError(err)
			}
			out := make([]historyJSON, 0, len(h.Records))
			for _, r := range h.Records {
				out = append(out, historyView(r))
			}
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printHistory(c.App.Writer, out, h.Truncated)
			}
			return partialMetaRead(h.Missing)
		},
	}
}

func historyView(r *adminpb.PlacementRecord) historyJSON {
	return historyJSON{At: time.UnixMilli(r.AtUnixMs).UTC().Format("2006-01-02T15:04:05.000Z07:00"), Type: r.EntityType, Shard: r.Shard,
		From: r.From, To: r.To, Epoch: epoch(r.Epoch), Cause: r.Cause, HandoffMs: r.HandoffMs, Entities: r.Entities, Coordinator: r.Coordinator}
}

func printHistory(w io.Writer, recs []historyJSON, truncated bool) {
	if len(recs) == 0 {
		fmt.Fprintln(w, "no placement changes recorded")
		return
	}
	if truncated {
		fmt.Fprintln(w, "(older records left out: raise --limit)")
	}
	t := cmdline.NewTable(w, "AT", "TYPE", "SHARD", "FROM", "TO", "EPOCH", "CAUSE", "HANDOFF", "ENTITIES")
	for _, r := range recs {
		handoff := "-"
		if r.HandoffMs > 0 {
			handoff = ms(r.HandoffMs).String()
		}
		t.Row(r.At, r.Type, r.Shard, cmdline.OrDash(cmdline.ShortID(r.From)), cmdline.ShortID(r.To), r.Epoch, r.Cause, handoff, fmt.Sprint(r.Entities))
	}
	t.Flush()
}

// partialMetaRead is exit code 3, naming the members missing, when a read of the metadata
// (history, audit) reached no majority of the members that hold it: what was printed are
// the copies of those that answered, possibly stale.
func partialMetaRead(missing []string) error {
	if len(missing) == 0 {
		return nil
	}
	return cli.Exit(fmt.Sprintf("partial result: the cluster metadata did not answer (no majority of its members; %s did not answer): "+
		"printed are the copies of the members that answered, possibly stale (changes made since they last applied are missing)",
		strings.Join(missing, ", ")), exitPartial)
}

// sinceAndLimit checks the --since and --limit flags of a listing of records (history, audit)
// and returns the time --since names (zero without it).
func sinceAndLimit(c *cli.Context) (time.Time, error) {
	if err := cmdline.PositiveFlag(c, "since"); err != nil {
		return time.Time{}, err
	}
	if c.Int("limit") < 1 {
		return time.Time{}, cmdline.Usagef("--limit %d: must be at least 1", c.Int("limit"))
	}
	if !c.IsSet("since") {
		return time.Time{}, nil
	}
	return time.Now().Add(-c.Duration("since")), nil
}
