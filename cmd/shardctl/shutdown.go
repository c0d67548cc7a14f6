package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// shutdownJSON is shutdown --json and leave --json.
type shutdownJSON struct {
	Node      string `json:"node"`
	Phase     string `json:"phase"` // handing-off, leaving, left
	Left      bool   `json:"left"`
	Shards    uint64 `json:"shards"`   // still hosted there
	Buffered  uint64 `json:"buffered"` // messages buffered there
	Status    string `json:"status"`
	ElapsedMs uint64 `json:"elapsed_ms"`
	Already   bool   `json:"already"` // the shutdown had been asked before
}

func shutdownView(p *adminpb.ShutdownProgress) shutdownJSON {
	return shutdownJSON{Node: p.Node, Phase: p.Phase, Left: p.Phase == admin.PhaseLeft, Shards: p.Shards, Buffered: p.Buffered,
		Status: p.Status, ElapsedMs: p.ElapsedMs, Already: p.Already}
}

// shutdownTimeout is shutdown's default --timeout: the default handoff-timeout (after
// which a member leaves anyway) and time to leave.
const shutdownTimeout = 90 * time.Second

func shutdownCommand() *cli.Command {
	return &cli.Command{
		Name:  "shutdown",
		Usage: "shut a member down gracefully: hand off all its shards, then leave (GracefulShutdown)",
		Description: `Asks the member named by --node to hand off every shard it hosts (other members buffer
their messages meanwhile; nothing is lost) and then to leave the cluster; its sharddaemon
exits 0. Progress is shown while it runs (shards left, messages buffered; on stderr with
--json). Exit code 0 once the member has left, 1 if it has not within --timeout (the
shutdown goes on), 4 if the caller is not an admin identity.
Example:
   shardctl shutdown --node /ip4/10.0.0.2/tcp/4001/p2p/12D3KooW... --identity admin.key
   shardctl shutdown --data-dir /tmp/a --node …Xy3kLm9q --identity admin.key --json`,
		Flags: []cli.Flag{timeoutFlag(shutdownTimeout, "fail (exit 1) if the member has not left within this long; the shutdown goes on")},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err // shutdown shuts down the member named by --node; for another: leave NODE
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			progress := progressOut(c)
			show := progressPrinter(progress)
			p, err := s.cl.Shutdown(s.ctx, show)
			var ce *admin.CallError
			switch {
			case errors.As(err, &ce):
				return callError(err)
			case err != nil && p == nil:
				return callError(err)
			case err != nil || p.Phase != admin.PhaseLeft:
				why := "lost contact with it"
				if errors.Is(err, context.DeadlineExceeded) || s.ctx.Err() != nil {
					why = "not finished within --timeout " + c.Duration("timeout").String()
				}
				return cli.Exit(fmt.Sprintf("%s: %s (last seen %s: %d shards left, %d messages buffered); the member goes on shutting down", cmdline.ShortID(p.Node), why, p.Phase, p.Shards, p.Buffered), exitFailed)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, shutdownView(p))
			}
			fmt.Fprintf(c.App.Writer, "%s handed off every shard and left the cluster in %v\n", cmdline.ShortID(p.Node), ms(p.ElapsedMs))
			return nil
		},
	}
}

// progressPrinter prints shutdown progress when it changes, and at least every 2 s.
func progressPrinter(w io.Writer) func(*adminpb.ShutdownProgress) {
	var last *adminpb.ShutdownProgress
	var printed time.Time
	return func(p *adminpb.ShutdownProgress) {
		if last != nil && p.Phase == last.Phase && p.Shards == last.Shards && p.Buffered == last.Buffered && time.Since(printed) < 2*time.Second {
			return
		}
		last, printed = p, time.Now()
		note := ""
		if p.Already && p.ElapsedMs < 500 {
			note = "  (a shutdown was already under way)"
		}
		fmt.Fprintf(w, "%s  %-11s  shards left %-5d  buffered %-6d  status %-8s  %v%s\n", cmdline.ShortID(p.Node), p.Phase, p.Shards, p.Buffered, p.Status, ms(p.ElapsedMs), note)
	}
}

func ms(n uint64) time.Duration {
	return (time.Duration(n) * time.Millisecond).Round(10 * time.Millisecond)
}
