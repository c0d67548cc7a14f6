package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// handoffJSON is one handoff of handoffs --json.
type handoffJSON struct {
	Type           string   `json:"type"`
	Shard          string   `json:"shard"`
	From           string   `json:"from"`
	Epoch          string   `json:"epoch"`
	Phase          string   `json:"phase"`
	Cause          string   `json:"cause"`
	ElapsedMs      uint64   `json:"elapsed_ms"`
	PhaseElapsedMs uint64   `json:"phase_elapsed_ms"`
	WaitingRegions []string `json:"waiting_regions"`
	Buffered       uint64   `json:"buffered"`
	Stragglers     []string `json:"stragglers"`
	ForceStopInMs  int64    `json:"force_stop_in_ms"`
	Coordinator    string   `json:"coordinator"`
}

type handoffsJSON struct {
	Node     string        `json:"node"`
	Handoffs []handoffJSON `json:"handoffs"`
	Failed   []failedJSON  `json:"failed"`
	Complete bool          `json:"complete"`
}

type failedJSON struct {
	Node  string `json:"node"`
	Error string `json:"error"`
}

func handoffsCommand() *cli.Command {
	return &cli.Command{
		Name:  "handoffs",
		Usage: "handoffs in progress: phase, elapsed time, buffered messages, what holds each up",
		Description: `Asks every member what it knows of the handoffs in progress and prints each with its
phase — begun (regions are told to buffer; the ones that have not acknowledged are named),
stopping-entities (every region buffers; the old home stops the shard's entities: those that
have not stopped are named, with the time left until handoff-timeout stops them by force),
stopped (the coordinator re-allocates it next) — its cause, how long it and its phase have
taken, and the messages buffered for it on every member. Members that did not answer are
listed and the exit code is 3. Completed handoffs show in 'shardctl watch' and 'shardctl
history'.
Example:
   shardctl handoffs --data-dir /tmp/a
   shardctl handoffs --data-dir /tmp/a --type counter --json`,
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
			h, err := s.cl.Handoffs(s.ctx, types, c.Duration("query-timeout"))
			if err != nil {
				return callError(err)
			}
			out := handoffsView(h)
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printHandoffs(c.App.Writer, out)
			}
			if !out.Complete {
				return cli.Exit(fmt.Sprintf("partial result: %d member(s) did not answer", len(out.Failed)), exitPartial)
			}
			return nil
		},
	}
}

func handoffsView(h *adminpb.HandoffsResponse) handoffsJSON {
	out := handoffsJSON{Node: h.Node, Handoffs: []handoffJSON{}, Failed: []failedJSON{}, Complete: len(h.Failed) == 0}
	for _, x := range h.Handoffs {
		out.Handoffs = append(out.Handoffs, handoffJSON{Type: x.EntityType, Shard: x.Shard, From: x.From, Epoch: epoch(x.Epoch), Phase: x.Phase,
			Cause: x.Cause, ElapsedMs: x.ElapsedMs, PhaseElapsedMs: x.PhaseElapsedMs, WaitingRegions: nonNil(x.WaitingRegions),
			Buffered: x.Buffered, Stragglers: nonNil(x.Stragglers), ForceStopInMs: x.ForceStopInMs, Coordinator: x.Coordinator})
	}
	for _, f := range h.Failed {
		out.Failed = append(out.Failed, failedJSON{Node: f.Node, Error: f.Error})
	}
	return out
}

func printHandoffs(w io.Writer, h handoffsJSON) {
	if len(h.Handoffs) == 0 {
		fmt.Fprintln(w, "no handoff in progress")
	} else {
		t := cmdline.NewTable(w, "TYPE", "SHARD", "FROM", "PHASE", "CAUSE", "ELAPSED", "IN PHASE", "BUFFERED", "HELD UP BY")
		for _, x := range h.Handoffs {
			t.Row(x.Type, x.Shard, cmdline.ShortID(x.From), x.Phase, x.Cause, ms(x.ElapsedMs).String(), ms(x.PhaseElapsedMs).String(), fmt.Sprint(x.Buffered), heldUpBy(x))
		}
		t.Flush()
	}
	for _, f := range h.Failed {
		fmt.Fprintf(w, "DID NOT ANSWER: %s (%s)\n", cmdline.ShortID(f.Node), f.Error)
	}
}

// heldUpBy names what a handoff waits for.
func heldUpBy(x handoffJSON) string {
	switch {
	case len(x.WaitingRegions) > 0:
		return "regions " + strings.Join(shortIDs(x.WaitingRegions), ", ")
	case len(x.Stragglers) > 0:
		when := fmt.Sprintf("forced stop in %v", ms(uint64(max(x.ForceStopInMs, 0))))
		if x.ForceStopInMs <= 0 {
			when = "forced stop due now"
		}
		return fmt.Sprintf("entities %s (%s)", listSome(x.Stragglers, 5, len(x.Stragglers)), when)
	}
	return "-"
}
