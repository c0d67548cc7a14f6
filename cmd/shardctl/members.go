package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/membership"
)

func membersCommand() *cli.Command {
	return &cli.Command{
		Name:  "members",
		Usage: "list the cluster's members as one member sees them",
		Description: `Lists every member with its status, age (up-number: lower is older), roles, app version
and reachability, and marks the oldest member and the leader.

Example:
   shardctl members --data-dir /tmp/shardmesh/a
   shardctl members --node /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW... --json`,
		Action: func(c *cli.Context) error {
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			cl, ctx := s.cl, s.ctx
			resp, err := cl.Members(ctx)
			if err != nil {
				return callError(err)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, resp)
			}
			// Oldest first: members not Up yet (up-number 0) last.
			sort.SliceStable(resp.Members, func(i, j int) bool {
				a, b := resp.Members[i].UpNumber, resp.Members[j].UpNumber
				if (a == 0) != (b == 0) {
					return b == 0
				}
				return a < b
			})
			t := cmdline.NewTable(c.App.Writer, "MEMBER", "STATUS", "AGE", "ROLES", "VERSION", "REACHABLE", "")
			up := 0
			for _, m := range resp.Members {
				if m.Status == "Up" {
					up++
				}
				var notes []string
				if m.Oldest {
					notes = append(notes, "oldest")
				}
				if m.Leader {
					notes = append(notes, "leader")
				}
				if m.Node == resp.Self {
					notes = append(notes, "(answering)")
				}
				age := "-"
				if m.UpNumber > 0 {
					age = strconv.FormatUint(m.UpNumber, 10)
				}
				reach := "yes"
				if !m.Reachable {
					reach = "NO"
				}
				t.Row(cmdline.ShortID(m.Node), m.Status, age, cmdline.OrDash(strings.Join(m.Roles, ",")), cmdline.OrDash(m.AppVersion), reach, strings.Join(notes, " "))
			}
			t.Flush()
			state := "converged"
			if !resp.Converged {
				state = "not converged (some member has not seen this view yet)"
			}
			fmt.Fprintf(c.App.Writer, "%d members, %d up; view %s\n", len(resp.Members), up, state)
			if wait := membership.RestartWait(int(resp.RestartNeed), int(resp.RestartJoined)); wait != "" {
				fmt.Fprintf(c.App.Writer, "waiting: %s\n", wait)
			}
			return nil
		},
	}
}
