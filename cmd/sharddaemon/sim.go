package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/internal/sim"
)

// The capacity simulator runs the members' real runtimes (node.Core and the store's machine):
// shardctl does not link them, and runs `shardctl sim cluster` here, as it runs the offline
// data commands (data.go).

// simCommand is sim cluster.
func simCommand() *cli.Command {
	return &cli.Command{
		Name:            "sim",
		Usage:           "offline simulations of a cluster at your scale",
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 {
				return cli.ShowSubcommandHelp(c)
			}
			return cmdline.Usagef("unknown command 'sim %s' (cluster; see '%s --help')", cmdline.Truncate(c.Args().First(), 80), c.Command.HelpName)
		},
		Subcommands: []*cli.Command{simClusterCommand()},
	}
}

func simClusterCommand() *cli.Command {
	return &cli.Command{
		Name:      "cluster",
		Usage:     "simulate N members with your configuration: time to converge, failure detection and failover, traffic per member",
		UsageText: "shardctl sim cluster --members N [--shards S] [--config FILE] [--set KEY=VALUE]... [--kill K] [--partition P] [--pause DURATION] [--json]",
		Description: `Runs N members' real runtimes (membership, sharding and the replicated store) in one
process, on a simulated network and in virtual time, with your configuration file: the same
code as the daemons, without the sockets and disks. It starts the members in batches (the first forms the cluster, the
others join through the first three), waits until every member is Up in one view, sends one
message to an entity of every shard so that all are allocated, and measures the traffic of
the idle cluster: messages and bytes per member and second, at the size of the frames the
daemons write (member ids and addresses as long as real ones). Then, one after the other:

   --kill K          kill -9 K members: when they are detected, downed and removed, and
                     when their shards run again (messages reach them every second)
   --partition P     cut P members off from the others: when the split-brain resolver has
                     settled it, and which side runs
   --pause D         stop one member (SIGSTOP) for D: whether the others removed it, and
                     what it does when it resumes

Times are seconds of virtual time. The run takes seconds of real time for a hundred members
and minutes for a thousand (with --shards 0, membership alone, about 3; with shards, the
store's reads of every member make it about 10); progress goes to standard error.

Example: a thousand members, the default configuration, one member killed
   shardctl sim cluster --members 1000 --kill 1

Example: your configuration, a partition, JSON for a script
   shardctl sim cluster --members 200 --config shardmesh.yaml --partition 80 --json

Exit codes: 0 done, 1 a phase did not finish within --limit or an invariant broke,
2 bad flags or configuration.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "members", Usage: "how many members `N` to simulate (required)"},
			&cli.IntFlag{Name: "shards", Value: -1, Usage: "shards `S` of one entity type every member runs; 0: membership alone (default: sharding.number-of-shards)"},
			&cli.StringFlag{Name: "config", Usage: "configuration `FILE` (YAML, TOML or JSON), as the daemons read it"},
			&cli.StringSliceFlag{Name: "set", Usage: "set a configuration key, e.g. --set cluster.split-brain-resolver.stable-after=5s (repeatable)"},
			&cli.IntFlag{Name: "kill", Usage: "kill -9 `K` members once the cluster is idle"},
			&cli.IntFlag{Name: "partition", Usage: "cut `P` members off from the others"},
			&cli.DurationFlag{Name: "pause", Usage: "pause one member for `DURATION` (SIGSTOP, then SIGCONT)"},
			&cli.IntFlag{Name: "batch", Value: 100, Usage: "members started at once, `B` every --batch-interval"},
			&cli.DurationFlag{Name: "batch-interval", Value: time.Second, Usage: "virtual time between batches"},
			&cli.DurationFlag{Name: "measure", Value: 30 * time.Second, Usage: "how long to measure the idle cluster's traffic (virtual time)"},
			&cli.DurationFlag{Name: "limit", Value: 10 * time.Minute, Usage: "virtual time each phase may take before the run fails"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of every random choice (the same seed, the same run)"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress on standard error"},
		},
		Action: runSimCluster,
	}
}

// simTypeName is the entity type the simulated members run.
const simTypeName = "counter"

func runSimCluster(c *cli.Context) error {
	if c.Args().Present() {
		return cmdline.Usagef("unexpected argument %q (sim cluster takes flags only)", c.Args().First())
	}
	if !c.IsSet("members") {
		return cmdline.Usagef("--members N is required, e.g. shardctl sim cluster --members 1000")
	}
	cfg, err := config.Load(config.Sources{File: c.String("config"), Flags: c.StringSlice("set")})
	if err != nil {
		return cmdline.Usagef("%v", err)
	}
	shards := c.Int("shards")
	if shards < 0 {
		shards = cfg.Sharding.NumberOfShards
	}
	if shards > 1<<20 {
		return cmdline.Usagef("--shards %d: at most %d", shards, 1<<20)
	}
	o := sim.CapacityOptions{
		Members: c.Int("members"), Membership: cfg.Membership, Shards: shards,
		Batch: c.Int("batch"), BatchInterval: c.Duration("batch-interval"), Measure: c.Duration("measure"),
		Kill: c.Int("kill"), Partition: c.Int("partition"), Pause: c.Duration("pause"),
		Limit: c.Duration("limit"), Seed: c.Uint64("seed"),
	}
	if o.Members < 1 || o.Members > 100_000 {
		return cmdline.Usagef("--members %d: between 1 and 100000", o.Members)
	}
	for _, f := range []string{"batch-interval", "measure", "limit"} {
		if err := cmdline.PositiveFlag(c, f); err != nil {
			return err
		}
	}
	if shards > 0 {
		cfg.Sharding.NumberOfShards = shards
		tc, err := engine.TypeFromConfig(cfg, simTypeName, "", nil, false)
		if err != nil {
			return cmdline.Usagef("sharding settings: %v", err)
		}
		o.Type = &tc
	}
	if !c.Bool("quiet") {
		o.Progress = func(line string) { fmt.Fprintln(c.App.ErrWriter, line) }
	}
	rep, err := sim.RunCapacity(o)
	if rep == nil { // the options were refused
		return cmdline.Usagef("%v", err)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if encErr := enc.Encode(rep); encErr != nil {
			return encErr
		}
	} else if printErr := printCapacity(c.App.Writer, rep, o); printErr != nil {
		return printErr
	}
	if err != nil {
		return cli.Exit(fmt.Sprintf("the simulation stopped at %.1f s of virtual time: %v", rep.VirtualS, err), exitFailed)
	}
	return nil
}

// printCapacity prints a report for a person.
func printCapacity(w io.Writer, r *sim.CapacityReport, o sim.CapacityOptions) error {
	sbr := o.Membership.SplitBrainResolver
	fd := o.Membership.FailureDetector
	shards := "membership alone"
	if r.Shards > 0 {
		shards = fmt.Sprintf("%d shards", r.Shards)
	}
	fmt.Fprintf(w, "%d members, %s; %s, %d voters, stable-after %v, heartbeat every %v, monitored by %d\n\n",
		r.Members, shards, sbr.ActiveStrategy, o.Membership.Voters, sbr.StableAfter, fd.HeartbeatInterval, fd.MonitoredByNrOfMembers)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{label}, args...)...)
	}
	fmt.Fprintf(tw, "cold start (%d members every %v through %d seeds)\n", o.Batch, o.BatchInterval, min(3, r.Members))
	line("every member Up", "%.1f s after the first start, %.1f s after the last", r.ConvergedS, r.AfterLastStartS)
	line("start to Up", "p50 %.1f s, p99 %.1f s, max %.1f s", r.StartToUp.P50, r.StartToUp.P99, r.StartToUp.Max)
	line("membership traffic", "%s sent per member until then", bytesOf(r.ColdStartMembershipBytesPerMember))
	if r.Shards > 0 {
		line("shards allocated", "%.1f s after (one message to each)", r.ShardsAllocatedS)
	}
	fmt.Fprintf(tw, "\nidle traffic per member and second (measured %.0f s)\n", r.MeasuredS)
	line("membership", "%.1f messages, %s", r.MembershipMsgsPerMemberPerS, bytesOf(r.MembershipBytesPerMemberPerS))
	line("sharding", "%.1f messages, %s", r.ShardingMsgsPerMemberPerS, bytesOf(r.ShardingBytesPerMemberPerS))
	if r.Shards > 0 {
		line("store", "%.1f messages, %s (every member asks all the others: it grows with the cluster)", r.StoreMsgsPerMemberPerS, bytesOf(r.StoreBytesPerMemberPerS))
	}
	kinds := make([]string, 0, len(r.Kinds))
	for k := range r.Kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		line("  "+k, "%.2f messages, %s", r.Kinds[k].Messages, bytesOf(r.Kinds[k].Bytes))
	}
	line("CPU of the simulation", "%v per member and second of virtual time (this machine)", r.IdleCPUPerMember.Round(time.Microsecond))
	if r.BusiestMember != "" {
		line("busiest member", "%.1f messages, %s (%s: a voter or the leader heartbeats every member; store included)", r.BusiestMsgsPerS, bytesOf(r.BusiestBytesPerS), shortID(r.BusiestMember))
	}
	if k := r.Kill; k != nil {
		fmt.Fprintf(tw, "\nkill -9 of %d member%s\n", k.Members, plural(k.Members))
		line("detected", "%.1f s", k.DetectedS)
		line("downed everywhere", "%.1f s", k.DownedS)
		within := "within"
		if k.RemovedS > k.BoundS {
			within = "BEYOND"
		}
		line("removed everywhere", "%.1f s (%s detection + stable-after + down-removal-margin + 2 s = %.1f s)", k.RemovedS, within, k.BoundS)
		if k.ShardsOnDead > 0 {
			line("their shards run again", "%.1f s (%d shards)", k.FailoverS, k.ShardsOnDead)
		}
	}
	if p := r.Partition; p != nil {
		fmt.Fprintf(tw, "\npartition: %d member%s cut off\n", p.Members, plural(p.Members))
		line("detected", "%.1f s", p.DetectedS)
		line("resolved", "%.1f s: %d members run, the other side stopped and is removed", p.ResolvedS, p.Kept)
		if p.FailoverS > 0 {
			line("shards run again", "%.1f s", p.FailoverS)
		}
	}
	if p := r.Pause; p != nil {
		fmt.Fprintf(tw, "\npause of one member for %.0f s\n", p.PausedS)
		if p.Removed {
			line("removed by the others", "%.1f s into the pause", p.RemovedS)
		} else {
			line("removed by the others", "no")
		}
		line("when resumed", "%s", p.Outcome)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%.0f s of virtual time in %.1f s (%d messages delivered)\n", r.VirtualS, r.WallS, r.Messages)
	return err
}

func bytesOf(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func shortID(id string) string {
	if len(id) <= 12 {
		return id
	}
	return id[:6] + "…" + id[len(id)-6:]
}
