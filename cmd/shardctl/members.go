package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/membership"
)

// membersJSON is members --json. Every field is always there, false and zero included.
type membersJSON struct {
	Self          string       `json:"self"`
	Leader        string       `json:"leader"`
	Oldest        string       `json:"oldest"`
	Converged     bool         `json:"converged"`
	RestartNeed   uint32       `json:"restart_need"`
	RestartJoined uint32       `json:"restart_joined"`
	Members       []memberJSON `json:"members"`
}

type memberJSON struct {
	Node        string   `json:"node"`
	Incarnation uint64   `json:"incarnation"`
	Addrs       []string `json:"addrs"`
	Roles       []string `json:"roles"`
	AppVersion  string   `json:"app_version"`
	Status      string   `json:"status"`
	UpNumber    uint64   `json:"up_number"`
	Reachable   bool     `json:"reachable"` // false for Removed members: nobody watches them
	Oldest      bool     `json:"oldest"`
	Leader      bool     `json:"leader"`
	Draining    bool     `json:"draining"` // shardctl drain: it gets no shards
}

func membersView(resp *adminpb.MembersResponse, draining []string) membersJSON {
	out := membersJSON{Self: resp.Self, Leader: resp.Leader, Oldest: resp.Oldest, Converged: resp.Converged,
		RestartNeed: resp.RestartNeed, RestartJoined: resp.RestartJoined, Members: []memberJSON{}}
	for _, m := range resp.Members {
		out.Members = append(out.Members, memberJSON{Node: m.Node, Incarnation: m.Incarnation, Addrs: nonNil(m.Addrs),
			Roles: nonNil(m.Roles), AppVersion: m.AppVersion, Status: m.Status, UpNumber: m.UpNumber,
			Reachable: m.Reachable && m.Status != "Removed", Oldest: m.Oldest, Leader: m.Leader,
			Draining: slices.Contains(draining, m.Node)})
	}
	return out
}

func membersCommand() *cli.Command {
	return &cli.Command{
		Name:  "members",
		Usage: "list the cluster's members as one member sees them",
		Description: `Lists every member with its status, age (up-number: lower is older), roles, app version
and reachability, and marks the oldest member, the leader and drained members (shardctl
drain). A Removed member is no longer watched: its REACHABLE is "-".

Example:
   shardctl members --data-dir /tmp/shardmesh/a
   shardctl members --node /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW... --json`,
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			resp, err := s.cl.Members(s.ctx)
			if err != nil {
				return callError(err)
			}
			var draining []string
			if d, err := s.cl.Directives(s.ctx); err == nil {
				draining = d.Draining
			} // a member that cannot tell its directives still lists its members
			view := membersView(resp, draining)
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, view)
			}
			printMembers(c, view)
			return nil
		},
	}
}

func printMembers(c *cli.Context, view membersJSON) {
	// Oldest first: members not Up yet (up-number 0) last.
	sort.SliceStable(view.Members, func(i, j int) bool {
		a, b := view.Members[i].UpNumber, view.Members[j].UpNumber
		if (a == 0) != (b == 0) {
			return b == 0
		}
		return a < b
	})
	t := cmdline.NewTable(c.App.Writer, "MEMBER", "STATUS", "AGE", "ROLES", "VERSION", "REACHABLE", "")
	up := 0
	for _, m := range view.Members {
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
		if m.Draining {
			notes = append(notes, "drained")
		}
		if m.Node == view.Self {
			notes = append(notes, "(answering)")
		}
		age := "-"
		if m.UpNumber > 0 {
			age = strconv.FormatUint(m.UpNumber, 10)
		}
		reach := "yes"
		switch {
		case m.Status == "Removed":
			reach = "-"
		case !m.Reachable:
			reach = "NO"
		}
		t.Row(cmdline.ShortID(m.Node), m.Status, age, cmdline.OrDash(strings.Join(m.Roles, ",")), cmdline.OrDash(m.AppVersion), reach, strings.Join(notes, " "))
	}
	t.Flush()
	state := "converged"
	if !view.Converged {
		state = "not converged (some member has not seen this view yet)"
	}
	fmt.Fprintf(c.App.Writer, "%d members, %d up; view %s\n", len(view.Members), up, state)
	if wait := membership.RestartWait(int(view.RestartNeed), int(view.RestartJoined)); wait != "" {
		fmt.Fprintf(c.App.Writer, "waiting: %s\n", wait)
	}
}
