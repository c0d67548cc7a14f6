package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// watchEventJSON is one line of watch --json.
type watchEventJSON struct {
	At         string   `json:"at"`
	Kind       string   `json:"kind"`
	EntityType string   `json:"entity_type,omitempty"`
	Shard      string   `json:"shard,omitempty"`
	From       string   `json:"from,omitempty"`
	To         string   `json:"to,omitempty"`
	Epoch      string   `json:"epoch,omitempty"`
	TookMs     uint64   `json:"took_ms,omitempty"`
	Cause      string   `json:"cause,omitempty"`
	Phase      string   `json:"phase,omitempty"`
	Shards     []string `json:"shards,omitempty"`
	Term       uint64   `json:"term,omitempty"`
	Origin     string   `json:"origin,omitempty"`
	Member     string   `json:"member,omitempty"`
	Status     string   `json:"status,omitempty"`
	Previous   string   `json:"previous,omitempty"`
	Detail     string   `json:"detail,omitempty"`
	Entity     string   `json:"entity,omitempty"`
	Entities   uint32   `json:"entities,omitempty"`
}

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "follow sharding and member events live",
		Description: `Prints sharding events of every member (shards allocated, handoffs begun and finished
with their duration, rebalance rounds, regions registered and terminated, coordinators
started) and member events as the member sees them (joining, up, leaving, unreachable,
removed, …), one per line, or one JSON object per line with --json. Runs until Ctrl-C,
--for or --count; --timeout bounds connecting only. Exit code 0 when stopped so, 1 when the
member stopped.
Example:
   shardctl watch --data-dir /tmp/a
   shardctl watch --data-dir /tmp/a --type counter --no-members --json --for 1m`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "type", Usage: "only sharding events of entity type `T` (repeatable)"},
			&cli.BoolFlag{Name: "no-members", Usage: "leave out member events"},
			&cli.DurationFlag{Name: "for", Usage: "stop after `DURATION`"},
			&cli.IntFlag{Name: "count", Usage: "stop after `N` events"},
		},
		Action: func(c *cli.Context) error {
			types, err := typeFlags(c)
			if err != nil {
				return err
			}
			if err := cmdline.PositiveFlag(c, "for"); err != nil {
				return err
			}
			if c.Int("count") < 0 {
				return cmdline.Usagef("--count %d: must not be negative", c.Int("count"))
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if d := c.Duration("for"); d > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			seen, limit := 0, c.Int("count")
			errEnough := errors.New("enough events")
			enc := json.NewEncoder(c.App.Writer)
			ready := func() {
				fmt.Fprintf(c.App.ErrWriter, "watching %s (Ctrl-C to stop)\n", cmdline.ShortID(s.cl.Node().String()))
			}
			err = s.cl.Watch(ctx, types, c.Bool("no-members"), ready, func(ev *adminpb.WatchEvent) error {
				if c.Bool("json") {
					if err := enc.Encode(watchView(ev)); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(c.App.Writer, watchLine(ev))
				}
				if seen++; limit > 0 && seen >= limit {
					return errEnough
				}
				return nil
			})
			if err != nil && !errors.Is(err, errEnough) {
				return callError(err)
			}
			return nil
		},
	}
}

func watchView(ev *adminpb.WatchEvent) watchEventJSON {
	out := watchEventJSON{At: time.UnixMilli(ev.AtUnixMs).UTC().Format("2006-01-02T15:04:05.000Z07:00"), Kind: ev.Kind,
		EntityType: ev.EntityType, Shard: ev.Shard, From: ev.From, To: ev.To, TookMs: ev.TookMs, Cause: ev.Cause,
		Phase: ev.Phase, Shards: ev.Shards, Term: ev.Term, Origin: ev.Origin, Member: ev.Member, Status: ev.Status,
		Previous: ev.Previous, Detail: ev.Detail, Entity: ev.Entity, Entities: ev.Entities}
	if ev.Epoch != 0 {
		out.Epoch = epoch(ev.Epoch)
	}
	return out
}

// watchLine formats an event as one line: time, kind, type, then the fields it has.
func watchLine(ev *adminpb.WatchEvent) string {
	parts := []string{time.UnixMilli(ev.AtUnixMs).Format("15:04:05.000"), fmt.Sprintf("%-20s", ev.Kind)}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("type", ev.EntityType)
	add("shard", ev.Shard)
	add("from", cmdline.ShortID(ev.From))
	add("to", cmdline.ShortID(ev.To))
	if ev.Epoch != 0 {
		add("epoch", epoch(ev.Epoch))
	}
	if ev.TookMs != 0 || ev.Kind == "handoff-completed" {
		add("took", (time.Duration(ev.TookMs) * time.Millisecond).String())
	}
	add("cause", ev.Cause)
	add("phase", ev.Phase)
	add("entity", ev.Entity)
	if ev.Entities != 0 {
		add("entities", strconv.FormatUint(uint64(ev.Entities), 10))
	}
	if len(ev.Shards) > 0 {
		add("shards", strconv.Itoa(len(ev.Shards))+":"+strings.ReplaceAll(listSome(ev.Shards, 8, len(ev.Shards)), " ", ""))
	}
	if ev.Term != 0 {
		add("term", strconv.FormatUint(ev.Term, 10))
	}
	add("member", cmdline.ShortID(ev.Member))
	add("was", ev.Previous)
	add("by", cmdline.ShortID(ev.Origin))
	if ev.Detail != "" {
		parts = append(parts, strconv.Quote(ev.Detail))
	}
	return strings.Join(parts, "  ")
}
