package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// reminderJSON is one reminder of reminders --json.
type reminderJSON struct {
	Type    string `json:"type"`
	Shard   string `json:"shard"`
	Entity  string `json:"entity"`
	Name    string `json:"name"`
	Due     string `json:"due"`      // RFC 3339, UTC
	EveryMs uint64 `json:"every_ms"` // 0: one-shot
	Payload []byte `json:"payload"`  // base64 in JSON: the message in the type's codec
	Epoch   string `json:"epoch"`
}

func remindersCommand() *cli.Command {
	return &cli.Command{
		Name:  "reminders",
		Usage: "the durable reminders of an entity type (or of one entity)",
		Description: `Lists the durable reminders stored for entity type T: shard, entity, name, when it fires
next, its period (- for a one-shot reminder), its message and the epoch of the home that
wrote it last. A reminder fires on its shard's home, which starts the entity if needed;
after a failover or a rebalance, on the new home. Reminders are kept with their shard's
records on its replica set: one entity's are read from a majority of that set, a whole
type's from every member; when some member does not answer, what the others hold is
printed, a line names the members missing, and the exit code is 3 (a partial result).
Example:
   shardctl reminders --data-dir /tmp/a --type counter
   shardctl reminders --data-dir /tmp/a --type counter --entity user-1 --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Required: true, Usage: "entity type `T`"},
			&cli.StringFlag{Name: "entity", Usage: "only entity `E`"},
			&cli.IntFlag{Name: "limit", Value: 1000, Usage: "at most `N` reminders"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			if err := admin.CheckTypeName(c.String("type")); err != nil {
				return cmdline.Usagef("--type: %v", err)
			}
			if c.Int("limit") < 1 {
				return cmdline.Usagef("--limit %d: must be at least 1", c.Int("limit"))
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			resp, err := s.cl.Reminders(s.ctx, c.String("type"), c.String("entity"), c.Int("limit"))
			if err != nil {
				return callError(err)
			}
			out := make([]reminderJSON, 0, len(resp.Reminders))
			for _, r := range resp.Reminders {
				out = append(out, reminderJSON{Type: r.EntityType, Shard: r.Shard, Entity: r.Entity, Name: r.Name,
					Due: time.UnixMilli(r.DueUnixMs).UTC().Format("2006-01-02T15:04:05.000Z07:00"), EveryMs: r.EveryMs, Payload: r.Payload, Epoch: epoch(r.Epoch)})
			}
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printReminders(c.App.Writer, out, resp.Truncated)
			}
			if len(resp.Missing) > 0 {
				return cli.Exit(fmt.Sprintf("partial result: the reminders only %s hold are missing (no answer)", strings.Join(resp.Missing, ", ")), exitPartial)
			}
			return nil
		},
	}
}

func printReminders(w io.Writer, rs []reminderJSON, truncated bool) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "no reminders")
		return
	}
	t := cmdline.NewTable(w, "SHARD", "ENTITY", "NAME", "DUE", "EVERY", "MESSAGE", "EPOCH")
	for _, r := range rs {
		every := "-"
		if r.EveryMs > 0 {
			every = ms(r.EveryMs).String()
		}
		t.Row(r.Shard, r.Entity, r.Name, r.Due, every, payloadText(r.Payload), r.Epoch)
	}
	t.Flush()
	if truncated {
		fmt.Fprintln(w, "(more reminders left out: raise --limit)")
	}
}

// payloadText shows a message as text when it is printable, else by its size.
func payloadText(b []byte) string {
	if utf8.Valid(b) && len(b) <= 40 {
		for _, r := range string(b) {
			if r < ' ' {
				return fmt.Sprintf("(%d bytes)", len(b))
			}
		}
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("(%d bytes)", len(b))
}
