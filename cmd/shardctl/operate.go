package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// operateTimeout is the default --timeout of operations that wait for handoffs: the default
// handoff-timeout and some.
const operateTimeout = 90 * time.Second

// directivesJSON is the --json of every directive command and of rebalance status.
type directivesJSON struct {
	Node            string    `json:"node"`
	Known           bool      `json:"known"`
	Draining        []string  `json:"draining"`
	RebalancePaused bool      `json:"rebalance_paused"`
	Pins            []pinJSON `json:"pins"`
	StoppedTypes    []string  `json:"stopped_types"`
}

type pinJSON struct {
	Type  string `json:"type"`
	Shard string `json:"shard"`
	Node  string `json:"node"`
}

func directivesView(d *adminpb.DirectivesResponse) directivesJSON {
	out := directivesJSON{Node: d.Node, Known: d.Known, Draining: nonNil(d.Draining), RebalancePaused: d.RebalancePaused,
		StoppedTypes: nonNil(d.StoppedTypes), Pins: []pinJSON{}}
	for _, p := range d.Pins {
		out.Pins = append(out.Pins, pinJSON{Type: p.EntityType, Shard: p.Shard, Node: p.Node})
	}
	return out
}

// printDirectives prints the directives in force, for people or as JSON.
func printDirectives(c *cli.Context, d *adminpb.DirectivesResponse) error {
	if c.Bool("json") {
		return cmdline.PrintJSON(c.App.Writer, directivesView(d))
	}
	w := c.App.Writer
	state := "active"
	if d.RebalancePaused {
		state = "PAUSED (shardctl rebalance resume)"
	}
	fmt.Fprintf(w, "rebalancing:   %s\n", state)
	fmt.Fprintf(w, "draining:      %s\n", cmdline.OrDash(strings.Join(shortIDs(d.Draining), ", ")))
	fmt.Fprintf(w, "stopped types: %s\n", cmdline.OrDash(strings.Join(d.StoppedTypes, ", ")))
	if len(d.Pins) == 0 {
		fmt.Fprintln(w, "pinned shards: -")
	} else {
		fmt.Fprintln(w, "pinned shards:")
		t := cmdline.NewTable(w, "  TYPE", "SHARD", "MEMBER")
		for _, p := range d.Pins {
			t.Row("  "+p.EntityType, p.Shard, cmdline.ShortID(p.Node))
		}
		t.Flush()
	}
	if !d.Known {
		fmt.Fprintf(w, "(member %s has not read the directives from the store yet)\n", cmdline.ShortID(d.Node))
	}
	return nil
}

// directiveAction is the action of a command on the directives: it takes its positional
// arguments (usage, n as positional does), connects, runs do, and prints the directives in
// force afterwards.
func directiveAction(usage string, n int, do func(c *cli.Context, s *session, args []string) (*adminpb.DirectivesResponse, error)) cli.ActionFunc {
	return func(c *cli.Context) error {
		args, err := cmdline.Positional(c, usage, n)
		if err != nil {
			return err
		}
		s, err := connect(c)
		if err != nil {
			return err
		}
		defer s.close()
		d, err := do(c, s, args)
		if err != nil {
			return err
		}
		return printDirectives(c, d)
	}
}

// waitFor polls done every half second until it reports true, printing what it says when it
// changes, or fails with exit code 1 when --timeout ends first.
func waitFor(c *cli.Context, s *session, what string, done func() (bool, string, error)) error {
	out := progressOut(c)
	last := ""
	for {
		ok, msg, err := done()
		if err != nil {
			return err
		}
		if msg != last {
			fmt.Fprintln(out, msg)
			last = msg
		}
		if ok {
			return nil
		}
		select {
		case <-s.ctx.Done():
			return cli.Exit(fmt.Sprintf("%s: not done within --timeout %v (it goes on; check again with shardctl stats)", what, c.Duration("timeout")), exitFailed)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// shardsOn returns where each shard of types (all when empty) runs, from stats. A member
// that did not answer keeps the shards the coordinator places there; when no coordinator
// said, it gets a placeholder, so that nobody concludes it holds none.
func shardsOn(s *session, types []string) (map[string]map[string]string, error) {
	st, err := s.cl.Stats(s.ctx, types, 0)
	if err != nil {
		return nil, callError(err)
	}
	out := map[string]map[string]string{} // type → shard → member
	for _, m := range st.Members {
		for _, r := range m.Regions {
			if out[r.EntityType] == nil {
				out[r.EntityType] = map[string]string{}
			}
			for _, sh := range r.Shards {
				out[r.EntityType][sh.Shard] = m.Node
			}
		}
	}
	for _, f := range st.Failed {
		for _, ts := range f.Shards {
			if out[ts.EntityType] == nil {
				out[ts.EntityType] = map[string]string{}
			}
			for _, sh := range ts.Shards {
				out[ts.EntityType][sh] = f.Node
			}
			if ts.Unknown {
				out[ts.EntityType]["(unknown, "+f.Node+" did not answer)"] = f.Node
			}
		}
	}
	return out, nil
}

func countOn(homes map[string]map[string]string, node string) int {
	n := 0
	for _, shards := range homes {
		for _, at := range shards {
			if at == node {
				n++
			}
		}
	}
	return n
}

var noWaitFlag = &cli.BoolFlag{Name: "no-wait", Usage: "return once the directive is stored, without waiting for the handoffs"}

func drainCommand() *cli.Command {
	return &cli.Command{
		Name:      "drain",
		Usage:     "move every shard off a member but keep it in the cluster",
		ArgsUsage: "NODE",
		Description: `Drains member NODE (its peer id, or the end of it): the coordinators hand off every shard it
hosts, of every entity type, and give it no new ones; it stays a member (it still routes
messages and serves as a replica of the store). The order is stored cluster-wide and survives
a coordinator failover; 'shardctl undrain NODE' takes it back. Waits until NODE hosts no
shard, showing how many are left (--no-wait returns at once). Needs an admin identity.
Exit codes: 0 drained, 1 not drained within --timeout, 2 bad usage, 4 refused.
Example:
   shardctl drain --data-dir /tmp/a --identity admin.key …Xy3kLm9q`,
		Flags: []cli.Flag{noWaitFlag, timeoutFlag(operateTimeout, "give up waiting (exit 1) after this long; the drain goes on")},
		Action: func(c *cli.Context) error {
			s, m, err := connectToMember(c, false)
			if err != nil {
				return err
			}
			defer s.close()
			d, err := s.cl.Drain(s.ctx, m.Node, true)
			if err != nil {
				return callError(err)
			}
			if !c.Bool("no-wait") {
				err := waitFor(c, s, "drain of "+cmdline.ShortID(m.Node), func() (bool, string, error) {
					homes, err := shardsOn(s, nil)
					if err != nil {
						return false, "", err
					}
					n := countOn(homes, m.Node)
					return n == 0, fmt.Sprintf("draining %s: %d shards left", cmdline.ShortID(m.Node), n), nil
				})
				if err != nil {
					return err
				}
			}
			return printDirectives(c, d)
		},
	}
}

func undrainCommand() *cli.Command {
	return &cli.Command{
		Name:      "undrain",
		Usage:     "let a drained member take shards again",
		ArgsUsage: "NODE",
		Description: `Takes back 'shardctl drain NODE': the member gets new shards again, and the next
rebalance rounds move shards to it as the allocation strategy sees fit. Needs an admin identity.
Example:
   shardctl undrain --data-dir /tmp/a --identity admin.key …Xy3kLm9q`,
		Action: directiveAction("NODE", 1, func(_ *cli.Context, s *session, args []string) (*adminpb.DirectivesResponse, error) {
			node := args[0]
			if m, err := s.member(args[0]); err == nil {
				node = m.Node
			} // a member that is gone can still be undrained by its full id
			d, err := s.cl.Drain(s.ctx, node, false)
			return d, callError(err)
		}),
	}
}

func shardCommand() *cli.Command {
	return &cli.Command{
		Name:  "shard",
		Usage: "move, pin or unpin one shard (external allocation)",
		Description: `Places shards by hand through the external allocation strategy: a pinned shard lives on
its member (moved there now, allocated there after a restart, never moved away by
rebalancing) until it is unpinned; unpinned shards follow the configured strategy. Pins are
stored with the coordinator state in the replicated store and survive a coordinator
failover. If the member cannot take shards (down, leaving, drained), the strategy places the
shard meanwhile. Needs an admin identity.
Example:
   shardctl shard move --data-dir /tmp/a --identity admin.key counter 17 …Xy3kLm9q
   shardctl shard unpin --data-dir /tmp/a --identity admin.key counter 17`,
		Subcommands: []*cli.Command{
			{
				Name:      "move",
				Usage:     "move a shard to a member and pin it there",
				ArgsUsage: "TYPE SHARD NODE",
				Description: `Pins shard SHARD of entity type TYPE to member NODE and waits until it runs there (a
handoff: its messages are buffered meanwhile, nothing is lost). --no-wait returns at once.
Exit codes: 0 moved, 1 not moved within --timeout, 2 bad usage, 4 refused.
Example:
   shardctl shard move --data-dir /tmp/a --identity admin.key counter 17 …Xy3kLm9q`,
				Flags: []cli.Flag{noWaitFlag, timeoutFlag(operateTimeout, "give up waiting (exit 1) after this long; the move goes on")},
				Action: func(c *cli.Context) error {
					args, err := cmdline.Positional(c, "TYPE SHARD NODE", 3)
					if err != nil {
						return err
					}
					return pinShard(c, args[0], args[1], args[2], !c.Bool("no-wait"))
				},
			},
			{
				Name:      "pin",
				Usage:     "pin a shard where it is (or to NODE)",
				ArgsUsage: "TYPE SHARD [NODE]",
				Description: `Pins shard SHARD of entity type TYPE to member NODE, or without NODE to the member that hosts
it now, so that rebalancing never moves it.
Example:
   shardctl shard pin --data-dir /tmp/a --identity admin.key counter 17`,
				Action: func(c *cli.Context) error {
					args, err := cmdline.Positional(c, "TYPE SHARD [NODE]", -2)
					if err != nil {
						return err
					}
					if len(args) > 3 {
						return cmdline.Usagef("shard pin needs TYPE SHARD [NODE] (got %d arguments)", len(args))
					}
					node := ""
					if len(args) == 3 {
						node = args[2]
					}
					return pinShard(c, args[0], args[1], node, false)
				},
			},
			{
				Name:      "unpin",
				Usage:     "let the allocation strategy place a shard again",
				ArgsUsage: "TYPE SHARD",
				Description: `Removes the pin of shard SHARD of entity type TYPE; it stays where it is until the
strategy's next rebalance moves it. A shard that is not pinned is refused (exit 4); while
the cluster metadata does not answer, whether it is pinned is unknown and nothing changes
(exit 1: try again once 'shardctl store status' shows the metadata's members reachable).
Example:
   shardctl shard unpin --data-dir /tmp/a --identity admin.key counter 17`,
				Action: directiveAction("TYPE SHARD", 2, func(_ *cli.Context, s *session, args []string) (*adminpb.DirectivesResponse, error) {
					d, err := s.cl.Directive(s.ctx, &adminpb.DirectiveRequest{Kind: "pin", EntityType: args[0], Shard: args[1], Undo: true})
					return d, callError(err)
				}),
			},
		},
	}
}

// pinShard pins a shard to node ("" for where it is now), waiting for it to run there.
func pinShard(c *cli.Context, typ, shardID, node string, wait bool) error {
	s, err := connect(c)
	if err != nil {
		return err
	}
	defer s.close()
	if node == "" {
		homes, err := shardsOn(s, []string{typ})
		if err != nil {
			return err
		}
		if node = homes[typ][shardID]; node == "" {
			return cli.Exit(fmt.Sprintf("shard %s of %s runs nowhere now: name the member to pin it to", shardID, typ), exitFailed)
		}
	} else {
		m, err := s.member(node)
		if err != nil {
			return err
		}
		node = m.Node
	}
	d, err := s.cl.Directive(s.ctx, &adminpb.DirectiveRequest{Kind: "pin", EntityType: typ, Shard: shardID, Node: node})
	if err != nil {
		return callError(err)
	}
	if wait {
		err := waitFor(c, s, fmt.Sprintf("move of %s/%s", typ, shardID), func() (bool, string, error) {
			homes, err := shardsOn(s, []string{typ})
			if err != nil {
				return false, "", err
			}
			at := homes[typ][shardID]
			if at == node {
				return true, fmt.Sprintf("%s/%s runs on %s", typ, shardID, cmdline.ShortID(node)), nil
			}
			return false, fmt.Sprintf("moving %s/%s to %s (now on %s)", typ, shardID, cmdline.ShortID(node), cmdline.OrDash(cmdline.ShortID(at))), nil
		})
		if err != nil {
			return err
		}
	}
	return printDirectives(c, d)
}

func rebalanceCommand() *cli.Command {
	pause := func(paused bool) cli.ActionFunc {
		return directiveAction("", 0, func(_ *cli.Context, s *session, _ []string) (*adminpb.DirectivesResponse, error) {
			d, err := s.cl.RebalancePause(s.ctx, paused)
			return d, callError(err)
		})
	}
	return &cli.Command{
		Name:  "rebalance",
		Usage: "pause, resume, inspect or preview automatic rebalancing",
		Description: `Automatic rebalancing moves shards between members as the allocation strategy decides,
every rebalance-interval. 'pause' stops it cluster-wide (stored, so a new coordinator keeps
it paused); operator moves, drains and graceful shutdowns go on. 'plan' is a dry run.
Example:
   shardctl rebalance pause --data-dir /tmp/a --identity admin.key
   shardctl rebalance plan --data-dir /tmp/a --type counter --if-join 2`,
		Subcommands: []*cli.Command{
			{Name: "pause", Usage: "stop automatic rebalancing cluster-wide (admin)", Action: pause(true),
				Description: "Example:\n   shardctl rebalance pause --data-dir /tmp/a --identity admin.key"},
			{Name: "resume", Usage: "restart automatic rebalancing (admin)", Action: pause(false),
				Description: "Example:\n   shardctl rebalance resume --data-dir /tmp/a --identity admin.key"},
			{
				Name: "status", Usage: "whether rebalancing is paused, and the other standing orders",
				Description: "Shows the directives in force: rebalancing paused or not, drained members, pinned shards,\nstopped types.\nExample:\n   shardctl rebalance status --data-dir /tmp/a --json",
				Action: directiveAction("", 0, func(_ *cli.Context, s *session, _ []string) (*adminpb.DirectivesResponse, error) {
					d, err := s.cl.Directives(s.ctx)
					return d, callError(err)
				}),
			},
			planCommand(),
		},
	}
}

// planJSON is rebalance plan --json.
type planJSON struct {
	Type            string         `json:"type"`
	Coordinator     string         `json:"coordinator"`
	RebalancePaused bool           `json:"rebalance_paused"`
	Moves           []planMoveJSON `json:"moves"`
	Problems        []string       `json:"problems,omitempty"`
}

type planMoveJSON struct {
	Shard      string `json:"shard"`
	From       string `json:"from"`
	To         string `json:"to"`
	Live       uint64 `json:"live_entities"`
	Remembered uint64 `json:"remembered_entities"`
}

func planCommand() *cli.Command {
	return &cli.Command{
		Name:  "plan",
		Usage: "dry run: which shards would move now, or after a join or a leave",
		Description: `Asks the coordinator of --type (of every type without it) which shards its allocation
strategy would move in the next rebalance round, or right after --if-join N new members join,
or after member --if-leave NODE leaves (its shards, one after the other, to where the
strategy puts them), and how many live and remembered entities each move restarts. Nothing
moves. For a deterministic strategy the plan is what happens if nothing else changes first.
Exit codes: 0 ok, 1 failed, 2 bad usage, 3 entity counts missing for some member.
Example:
   shardctl rebalance plan --data-dir /tmp/a --type counter
   shardctl rebalance plan --data-dir /tmp/a --if-leave …Xy3kLm9q --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Usage: "the entity type (default: every type)"},
			&cli.IntFlag{Name: "if-join", Usage: "preview the round after this many new members join"},
			&cli.StringFlag{Name: "if-leave", Usage: "preview the moves when this member leaves"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			join := c.Int("if-join")
			if join < 0 || join > 1000 {
				return cmdline.Usagef("--if-join %d: must be between 0 and 1000", join)
			}
			if join > 0 && c.String("if-leave") != "" {
				return cmdline.Usagef("--if-join and --if-leave: give one of them")
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			leave := ""
			if c.String("if-leave") != "" {
				m, err := s.member(c.String("if-leave"))
				if err != nil {
					return err
				}
				leave = m.Node
			}
			types := []string{c.String("type")}
			if types[0] == "" {
				if types, err = s.cl.Types(s.ctx); err != nil {
					return callError(err)
				}
			}
			var plans []planJSON
			partial := false
			for _, typ := range types {
				p, err := s.cl.Plan(s.ctx, typ, join, leave)
				if err != nil {
					return callError(err)
				}
				partial = partial || len(p.Problems) > 0
				pj := planJSON{Type: p.EntityType, Coordinator: p.Coordinator, RebalancePaused: p.RebalancePaused, Problems: p.Problems, Moves: []planMoveJSON{}}
				for _, m := range p.Moves {
					pj.Moves = append(pj.Moves, planMoveJSON{Shard: m.Shard, From: m.From, To: m.To, Live: m.LiveEntities, Remembered: m.RememberedEntities})
				}
				plans = append(plans, pj)
			}
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, plans); err != nil {
					return err
				}
			} else {
				printPlans(c.App.Writer, plans)
			}
			if partial {
				return cli.Exit("partial answer: some entity counts are missing", exitPartial)
			}
			return nil
		},
	}
}

func printPlans(w io.Writer, plans []planJSON) {
	for _, p := range plans {
		var live, remembered uint64
		for _, m := range p.Moves {
			live += m.Live
			remembered += m.Remembered
		}
		note := ""
		if p.RebalancePaused {
			note = " once rebalancing is resumed (it is paused)"
		}
		fmt.Fprintf(w, "%s: %d shards would move, restarting %d live and %d remembered entities%s\n", p.Type, len(p.Moves), live, remembered, note)
		if len(p.Moves) > 0 {
			t := cmdline.NewTable(w, "  SHARD", "FROM", "TO", "LIVE", "REMEMBERED")
			for _, m := range p.Moves {
				t.Row("  "+m.Shard, cmdline.ShortID(m.From), cmdline.OrDash(cmdline.ShortID(m.To)), fmt.Sprint(m.Live), fmt.Sprint(m.Remembered))
			}
			t.Flush()
		}
		for _, pr := range p.Problems {
			fmt.Fprintln(w, "  missing: "+pr)
		}
	}
}

// typesServiceCommands are types stop and types start.
func typesServiceCommands() []*cli.Command {
	service := func(stop bool) cli.ActionFunc {
		return directiveAction("TYPE", 1, func(c *cli.Context, s *session, args []string) (*adminpb.DirectivesResponse, error) {
			typ := args[0]
			d, err := s.cl.Directive(s.ctx, &adminpb.DirectiveRequest{Kind: "stop", EntityType: typ, Undo: !stop})
			if err != nil || !stop || c.Bool("no-wait") {
				return d, callError(err)
			}
			return d, waitFor(c, s, "stop of "+typ, func() (bool, string, error) {
				homes, err := shardsOn(s, []string{typ})
				if err != nil {
					return false, "", err
				}
				return len(homes[typ]) == 0, fmt.Sprintf("stopping %s: %d shards still running", typ, len(homes[typ])), nil
			})
		})
	}
	return []*cli.Command{
		{
			Name: "stop", Usage: "take an entity type out of service cluster-wide (admin)", ArgsUsage: "TYPE",
			Description: `Hands off and stops every shard of TYPE on every member and allocates none; messages to it
fail at once with "entity type stopped by an operator". The order is stored and survives
restarts and coordinator failover. Waits until no shard of TYPE runs (--no-wait returns at
once). Then its data can be removed with 'shardctl data remove TYPE'.
Exit codes: 0 stopped, 1 not stopped within --timeout, 2 bad usage, 4 refused.
Example:
   shardctl types stop --data-dir /tmp/a --identity admin.key counter`,
			Flags:  []cli.Flag{noWaitFlag, timeoutFlag(operateTimeout, "give up waiting (exit 1) after this long; the stop goes on")},
			Action: service(true),
		},
		{
			Name: "start", Usage: "bring a stopped entity type back into service (admin)", ArgsUsage: "TYPE",
			Description: `Takes back 'shardctl types stop TYPE': shards are allocated again on their next message
(and, with remember-entities, the remembered ones at once).
Example:
   shardctl types start --data-dir /tmp/a --identity admin.key counter`,
			Action: service(false),
		},
	}
}

// dataRemoveJSON is one line of data remove --json.
type dataRemoveJSON struct {
	Type        string   `json:"type"`
	Records     uint64   `json:"records"`
	Removed     uint64   `json:"removed"`
	DryRun      bool     `json:"dry_run"`
	Prefixes    []string `json:"prefixes"`
	Unreachable []string `json:"unreachable"`
}

func dataRemoveCommand() *cli.Command {
	return &cli.Command{
		Name:      "remove",
		Usage:     "remove the stored data of stopped entity types, cluster-wide (admin)",
		ArgsUsage: "TYPE...",
		Description: `Removes what the cluster stores for each TYPE — its remembered shards and entities and its
placement history, and with --include-state its entities' durable state (application data,
as remove-internal-data) — through the replicated store: every record gets a tombstone that a
majority acknowledges, so a member that is down now drops the data when it catches up (no
offline step is needed for it). Allowed only while every TYPE is stopped cluster-wide
('shardctl types stop TYPE'): refused with exit code 4 otherwise, naming the members where
it still runs, and nothing is removed. Other types' data is untouched. --shard S narrows the
removal to one shard of one TYPE (its remembered shard and entities, placement history and
reminders; with --include-state its entities' state), --entity E to one entity (its
remembered entity and reminders; with --include-state its state). --dry-run says what
would be removed. Asks for confirmation unless --yes. Progress is shown per type.
Example:
   shardctl data remove --data-dir /tmp/a --identity admin.key --dry-run counter
   shardctl data remove --data-dir /tmp/a --identity admin.key --yes counter
   shardctl data remove --data-dir /tmp/a --identity admin.key --yes --shard 17 counter
   shardctl data remove --data-dir /tmp/a --identity admin.key --yes --include-state --entity user-1 counter`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "only say what would be removed"},
			&cli.BoolFlag{Name: "include-state", Usage: "also remove the entities' durable state (application data: counters' values)"},
			&cli.StringFlag{Name: "shard", Usage: "only shard `S` of the one TYPE"},
			&cli.StringFlag{Name: "entity", Usage: "only entity `E` of the one TYPE"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
			timeoutFlag(10*time.Minute, "give up (exit 1) after this long"),
		},
		Action: func(c *cli.Context) error {
			types, err := cmdline.Positional(c, "TYPE...", -1)
			if err != nil {
				return err
			}
			scope := admin.DataScope{Shard: c.String("shard"), Entity: c.String("entity")}
			switch {
			case scope.Shard != "" && scope.Entity != "":
				return cmdline.Usagef("--shard and --entity: name one of them")
			case (scope.Shard != "" || scope.Entity != "") && len(types) != 1:
				return cmdline.Usagef("--shard and --entity narrow the removal of one TYPE; %d named", len(types))
			}
			s, err := connect(c)
			if err != nil {
				return err
			}
			defer s.close()
			dry := c.Bool("dry-run")
			if !dry && !c.Bool("yes") {
				// A dry run first: authorisation and the stopped check, and what would go.
				var lines []string
				err := s.cl.DataRemove(s.ctx, types, scope, c.Bool("include-state"), true, func(p *adminpb.DataRemoveProgress) {
					if p.Done {
						lines = append(lines, fmt.Sprintf("%s: %d records", p.EntityType, p.Records))
					}
				})
				if err != nil {
					return callError(err)
				}
				ok, err := cmdline.Confirm(c, "Remove the stored data of "+strings.Join(lines, ", ")+"? This cannot be undone")
				if err != nil {
					return err
				}
				if !ok {
					return cli.Exit("not confirmed: nothing changed", exitFailed)
				}
			}
			out := progressOut(c)
			var results []dataRemoveJSON
			err = s.cl.DataRemove(s.ctx, types, scope, c.Bool("include-state"), dry, func(p *adminpb.DataRemoveProgress) {
				if !p.Done {
					fmt.Fprintf(out, "%s: %d of %d records removed\n", p.EntityType, p.Removed, p.Records)
					return
				}
				results = append(results, dataRemoveJSON{Type: p.EntityType, Records: p.Records, Removed: p.Removed, DryRun: dry,
					Prefixes: p.Prefixes, Unreachable: nonNil(p.Unreachable)})
			})
			if err != nil {
				return callError(err)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, results)
			}
			for _, r := range results {
				if dry {
					fmt.Fprintf(c.App.Writer, "%s: would remove %d records (keys starting %s)\n", r.Type, r.Records, strings.Join(r.Prefixes, ", "))
				} else {
					fmt.Fprintf(c.App.Writer, "%s: removed %d records\n", r.Type, r.Removed)
				}
				if len(r.Unreachable) > 0 {
					fmt.Fprintf(c.App.Writer, "  members that did not answer (they drop the data when they catch up): %s\n", strings.Join(shortIDs(r.Unreachable), ", "))
				}
			}
			return nil
		},
	}
}
