package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"
	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/datatool"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/p2p"
)

// defaultProbeTimeout bounds each try to reach a member before a removal.
const defaultProbeTimeout = 2 * time.Second

func removeInternalDataCommand() *cli.Command {
	return &cli.Command{
		Name:      "remove-internal-data",
		Usage:     "remove the sharding data of entity types from stopped members' data directories",
		ArgsUsage: "TYPE...",
		Description: `Removes the internal sharding data of exactly the named entity types (Akka's
RemoveInternalClusterShardingData) from the stores in the --data-dir directories (repeatable;
name every member's directory: each holds a replica, and anti-entropy brings removed data
back from a member that still has it). Internal data is the remembered shards, remembered
entities and placement history; the entities' durable state is application data and is
kept unless --include-state. Other types' data is never touched.

Works on stopped members only: refused (exit code 4) while a sharddaemon holds a directory,
or when a member answers at an address in a directory's addrs file or given with --node
(pass the cluster's other members' addresses there: a stopped member keeps no list of them).
--dry-run says what would be removed, per directory and type, and changes nothing. Before
removing, each directory's store is backed up to DIR/backups/store-<time>.backup (or into
--backup-dir) unless --no-backup; 'shardctl data restore' loads such a backup. Asks for
confirmation unless --yes. Progress goes to stderr.
Exit codes: 0 done, 1 failed or not confirmed, 2 bad usage, 4 refused (a sharddaemon holds a
directory, or a member answers).
Example:
   shardctl remove-internal-data --data-dir /tmp/a --data-dir /tmp/b --dry-run counter
   shardctl remove-internal-data --data-dir /tmp/a --data-dir /tmp/b --node /ip4/10.0.0.3/tcp/4001/p2p/12D3KooW... --yes counter
   shardctl remove-internal-data --data-dir /tmp/a --include-state --no-backup --yes --json counter`,
		Flags: []cli.Flag{
			dataDirFlag("a stopped member's data `DIR` (repeatable; name every member's)"),
			&cli.BoolFlag{Name: "dry-run", Usage: "say what would be removed; change nothing"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
			&cli.BoolFlag{Name: "include-state", Usage: "remove the types' durable entity state (application data) too"},
			&cli.BoolFlag{Name: "no-backup", Usage: "do not back up the stores before removing"},
			&cli.StringFlag{Name: "backup-dir", Usage: "write the backups into `DIR` (default: each data directory's backups/)"},
			&cli.StringSliceFlag{Name: "node", Usage: "`MULTIADDR` of another member to check is stopped (repeatable)"},
			&cli.StringFlag{Name: "cluster-key", Usage: "the cluster's key `FILE`, to reach members of a cluster that has one", EnvVars: []string{"SHARDMESH_CLUSTER_KEY"}},
			&cli.DurationFlag{Name: "probe-timeout", Usage: "how long to try each member address", Value: defaultProbeTimeout},
		},
		Action: removeInternalData,
	}
}

// removalArgs checks what remove-internal-data was given before anything is opened.
func removalArgs(c *cli.Context) (types, paths, nodes []string, psk pnet.PSK, err error) {
	args, err := cmdline.PositionalArgs(c)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if len(args) == 0 {
		return nil, nil, nil, nil, cmdline.Usagef("remove-internal-data needs TYPE... (the entity types whose data to remove; see '%s --help')", c.Command.HelpName)
	}
	for _, t := range args {
		if err := admin.CheckTypeName(t); err != nil {
			return nil, nil, nil, nil, cmdline.Usagef("TYPE %q: %v", cmdline.Truncate(t, 80), err)
		}
		if strings.Contains(t, datadir.Sep) {
			return nil, nil, nil, nil, cmdline.Usagef("TYPE %q: contains a 0 byte", cmdline.Truncate(t, 80))
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	if paths, err = dataDirs(c, 0); err != nil {
		return nil, nil, nil, nil, err
	}
	if err := cmdline.PositiveFlag(c, "probe-timeout"); err != nil {
		return nil, nil, nil, nil, err
	}
	nodes = c.StringSlice("node")
	for _, n := range nodes {
		ma, err := multiaddr.NewMultiaddr(n)
		if err == nil {
			_, err = peer.AddrInfoFromP2pAddr(ma)
		}
		if err != nil {
			return nil, nil, nil, nil, cmdline.Usagef("--node %q: want a member's multiaddr ending in /p2p/<peer id>", cmdline.Truncate(n, 120))
		}
	}
	if f := c.String("cluster-key"); f != "" {
		if psk, err = p2p.LoadClusterKey(f); err != nil {
			return nil, nil, nil, nil, cmdline.Usagef("--cluster-key: %v", err)
		}
	}
	return types, paths, nodes, psk, nil
}

func removeInternalData(c *cli.Context) error {
	types, paths, nodes, psk, err := removalArgs(c)
	if err != nil {
		return err
	}
	dryRun := c.Bool("dry-run")
	if !dryRun && !c.Bool("yes") {
		if err := cmdline.NeedTerminal(c); err != nil {
			return err
		}
	}

	dirs, err := openDirs(paths, false)
	if err != nil {
		return err
	}
	defer datatool.CloseAll(dirs)
	if answers := datatool.Probe(datatool.ProbeTargets(dirs, nodes), psk, c.Duration("probe-timeout")); len(answers) > 0 {
		lines := make([]string, len(answers))
		for i, a := range answers {
			lines[i] = a.String()
		}
		slices.Sort(lines)
		return cmdline.Refusef("refused: the cluster is running: %s; stop every member first", strings.Join(lines, "; "))
	}

	plan, err := datatool.PlanRemoval(dirs, datatool.Selection{Types: types, IncludeState: c.Bool("include-state")})
	if err != nil {
		return cmdline.Failf("%v", err)
	}
	plan.DryRun = dryRun
	warn := c.App.ErrWriter
	if len(plan.UnknownTypes) > 0 {
		fmt.Fprintf(warn, "warning: no data of %s in any of the directories (types stored there: %s)\n",
			cmdline.QuoteAll(plan.UnknownTypes), cmdline.OrDash(strings.Join(datatool.StoredTypes(dirs), ", ")))
	}
	for _, d := range plan.DataDirs {
		if !d.Store {
			fmt.Fprintf(warn, "warning: %s holds no store: nothing to remove there\n", d.DataDir)
		}
	}
	if len(plan.OtherWriters) > 0 {
		fmt.Fprintf(warn, "warning: members whose directories are not named here wrote some of this data: %s; remove it from their directories too, or anti-entropy brings it back when they run again\n",
			strings.Join(plan.OtherWriters, ", "))
	}

	if dryRun || plan.RemovedKeys == 0 {
		return printRemoval(c, plan)
	}
	if !c.Bool("yes") {
		ok, err := cmdline.Confirm(c, fmt.Sprintf("Remove %d keys (%d bytes) of %s from %s%s?",
			plan.RemovedKeys, plan.RemovedBytes, strings.Join(types, ", "), cmdline.Plural(len(dirs), "data directory", "data directories"), backupNote(c)))
		if err != nil {
			return err
		}
		if !ok {
			return cmdline.Failf("not confirmed: nothing changed")
		}
	}
	// Back up every store first: if one backup fails, nothing has been removed anywhere.
	now := time.Now()
	for i, d := range dirs {
		dr := &plan.DataDirs[i]
		if c.Bool("no-backup") || !dr.Removes() {
			continue
		}
		path, err := datatool.DefaultBackupPath(d, c.String("backup-dir"), now)
		if err != nil {
			return cmdline.Failf("%v (nothing was removed)", err)
		}
		size, err := datatool.BackupFile(d, path)
		if err != nil {
			return cmdline.Failf("%v (nothing was removed)", err)
		}
		dr.Backup, dr.BackupBytes = path, size
		fmt.Fprintf(warn, "%s: backed up to %s (%d bytes)\n", d.Path, path, size)
	}
	for i, d := range dirs {
		dr := plan.DataDirs[i]
		if !dr.Removes() {
			continue
		}
		warnings, err := dr.Remove(d, func(it datatool.RemovalItem, done int) {
			fmt.Fprintf(warn, "%s: %s %s: removed %d of %d keys\n", d.Path, it.EntityType, it.Data, done, it.Keys)
		})
		for _, w := range warnings {
			fmt.Fprintf(warn, "warning: %s\n", w)
		}
		if err != nil {
			return cmdline.Failf("%v", err)
		}
		n, b := dr.Removed()
		fmt.Fprintf(warn, "%s: done: removed %d keys (%d bytes)\n", d.Path, n, b)
	}
	return printRemoval(c, plan)
}

func backupNote(c *cli.Context) string {
	if c.Bool("no-backup") {
		return " without a backup"
	}
	return " (backing up each store first)"
}

func printRemoval(c *cli.Context, rep *datatool.Removal) error {
	if c.Bool("json") {
		return cmdline.PrintJSON(c.App.Writer, rep)
	}
	w := c.App.Writer
	removed, kept := "removed", "kept"
	if rep.DryRun {
		fmt.Fprintln(w, "dry run: nothing was changed")
		removed, kept = "would remove", "would keep"
	}
	t := cmdline.NewTable(w, "DATA DIR", "TYPE", "DATA", "KEYS", "BYTES", "")
	for _, d := range rep.DataDirs {
		name := d.DataDir
		if d.Member != "" {
			name += " (" + cmdline.ShortID(d.Member) + ")"
		}
		if len(d.Items) == 0 {
			t.Row(name, "-", "nothing stored of these types", "0", "0", "")
			continue
		}
		for _, it := range d.Items {
			action := removed
			if !it.Removed {
				action = kept + " (application data; --include-state removes it)"
			}
			t.Row(name, it.EntityType, it.Data, strconv.Itoa(it.Keys), strconv.FormatInt(it.Bytes, 10), action)
			name = ""
		}
	}
	t.Flush()
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	var found []string
	for _, typ := range rep.Types {
		if !slices.Contains(rep.UnknownTypes, typ) {
			found = append(found, typ)
		}
	}
	fmt.Fprintf(w, "total: %s %d keys (%d bytes) of %s in %s\n", verb, rep.RemovedKeys, rep.RemovedBytes, cmdline.OrDash(strings.Join(found, ", ")),
		cmdline.Plural(len(rep.DataDirs), "data directory", "data directories"))
	for _, d := range rep.DataDirs {
		if d.Backup != "" {
			fmt.Fprintf(w, "backup of %s: %s (restore: shardctl data restore --data-dir %s --in %s --replace)\n", d.DataDir, d.Backup, d.DataDir, d.Backup)
		}
	}
	return nil
}
