package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/cmdline"
)

func leaveCommand() *cli.Command {
	return &cli.Command{
		Name:      "leave",
		Usage:     "ask a member to leave the cluster gracefully (it hands off its shards first)",
		ArgsUsage: "NODE",
		Description: `Asks member NODE (its peer id, or the end of it as 'shardctl members' shows it) to shut
down gracefully: hand off every shard, then leave; its sharddaemon then exits 0. Returns
once the member has accepted; to follow it until it has left, use
'shardctl shutdown --node NODE'. Needs an admin identity (exit code 4 otherwise). shardctl
connects to NODE itself, at the addresses the cluster knows for it.
Example:
   shardctl leave --data-dir /tmp/a --identity admin.key …Xy3kLm9q`,
		Action: func(c *cli.Context) error {
			s, m, err := connectToMember(c, false)
			if err != nil {
				return err
			}
			defer s.close()
			target := s.cl
			if m.Node != s.cl.Node().String() {
				if target, err = s.dialMember(m); err != nil {
					return err
				}
				defer target.Close()
			}
			p, err := target.Shutdown(s.ctx, nil)
			if err != nil {
				return callError(err)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, shutdownView(p))
			}
			switch {
			case p.Already:
				fmt.Fprintf(c.App.Writer, "%s is already shutting down: %s, %d shards left\n", cmdline.ShortID(m.Node), p.Phase, p.Shards)
			default:
				fmt.Fprintf(c.App.Writer, "%s is leaving: it hands off its %d shards, then leaves the cluster (shardctl members shows it Leaving, then gone)\n", cmdline.ShortID(m.Node), p.Shards)
			}
			return nil
		},
	}
}
