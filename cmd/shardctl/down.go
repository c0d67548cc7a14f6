package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// downJSON is down --json.
type downJSON struct {
	Node      string `json:"node"`
	Downed    bool   `json:"downed"` // false: it was Down already
	Status    string `json:"status"`
	Reachable bool   `json:"reachable"` // as the answering member saw it
}

func downCommand() *cli.Command {
	return &cli.Command{
		Name:      "down",
		Usage:     "mark a member Down (it is removed; its shards start elsewhere)",
		ArgsUsage: "NODE",
		Description: `Marks member NODE (its peer id, or the end of it) Down, as Akka's Cluster.down: the
cluster removes it and allocates its shards elsewhere; it must restart to join again. Meant
for a member that crashed or is cut off and will not come back by itself. Refused (exit
code 4) without --force when NODE is reachable and the answering member is on the majority
side (use 'shardctl leave' for a healthy member), or when the answering member is not on
the majority side itself. Asks for confirmation unless --yes. Needs an admin identity.
Example:
   shardctl down --data-dir /tmp/a --identity admin.key …Xy3kLm9q
   shardctl down --data-dir /tmp/a --identity admin.key --yes --json 12D3KooW...`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
			&cli.BoolFlag{Name: "force", Usage: "down it even if it is reachable, or from a member outside the majority"},
		},
		Action: func(c *cli.Context) error {
			s, m, err := connectToMember(c, true)
			if err != nil {
				return err
			}
			defer s.close()
			// Ask first whether the member would do it (authorisation, safety), so nobody
			// confirms what is then refused.
			check, err := s.cl.Down(s.ctx, m.Node, c.Bool("force"), true)
			if err != nil {
				return callError(err)
			}
			if check.Status == "Down" || check.Status == "Removed" {
				return report(c, downJSON{Node: m.Node, Status: check.Status, Reachable: check.Reachable})
			}
			if !c.Bool("yes") {
				reach := "unreachable"
				if check.Reachable {
					reach = "REACHABLE"
				}
				ok, err := cmdline.Confirm(c, fmt.Sprintf("Down member %s (%s, %s, %s)? It is removed from the cluster and its shards start elsewhere", cmdline.ShortID(m.Node), m.Node, m.Status, reach))
				if err != nil {
					return err
				}
				if !ok {
					return cli.Exit("not confirmed: nothing changed", exitFailed)
				}
			}
			d, err := s.cl.Down(s.ctx, m.Node, c.Bool("force"), false)
			if err != nil {
				return callError(err)
			}
			return report(c, downJSON{Node: d.Node, Downed: d.Downed, Status: d.Status, Reachable: d.Reachable})
		},
	}
}

func report(c *cli.Context, d downJSON) error {
	if c.Bool("json") {
		return cmdline.PrintJSON(c.App.Writer, d)
	}
	if !d.Downed {
		fmt.Fprintf(c.App.Writer, "%s is %s already\n", cmdline.ShortID(d.Node), d.Status)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "%s is Down; the cluster removes it and allocates its shards elsewhere\n", cmdline.ShortID(d.Node))
	return nil
}
