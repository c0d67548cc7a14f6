package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/datatool"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// The offline data commands work on stopped members' data directories. They live in the
// daemon, the binary that writes those directories and links the store; shardctl's commands
// of the same names run them here (its data.go), so that shardctl links no store.

// dataCommand is data inspect|backup|restore|verify|rebuild.
func dataCommand() *cli.Command {
	return &cli.Command{
		Name:  "data",
		Usage: "inspect, back up, restore, verify, rebuild and upgrade stopped members' data directories",
		Description: `Offline tools for the store (remembered shards and entities, durable entity state) in
a stopped member's data directory: inspect, backup, restore, verify, rebuild, upgrade. They
refuse (exit code 4) a directory a running sharddaemon holds. shardctl data … runs them.
Exit codes: 0 done, 1 failed, 2 bad usage, 4 refused (a running sharddaemon holds a directory).
Example:
   shardctl data inspect --data-dir /tmp/a
   shardctl data backup --data-dir /tmp/a --out a.backup
   shardctl data restore --data-dir /tmp/a --in a.backup --replace
   shardctl data verify --data-dir /tmp/a
   shardctl data rebuild --data-dir /tmp/a
   shardctl data upgrade --data-dir /tmp/a`,
		Flags:           []cli.Flag{&cli.BoolFlag{Name: "json", Hidden: true}}, // the subcommands have it
		HideHelpCommand: true,
		// Without a known subcommand: help, or one line naming the unknown one (exit 2).
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 {
				return cli.ShowSubcommandHelp(c)
			}
			return cmdline.UnknownCommand(c, c.Args().First())
		},
		Subcommands: []*cli.Command{dataInspectCommand(), dataBackupCommand(), dataRestoreCommand(), dataVerifyCommand(), dataRebuildCommand(), dataUpgradeCommand()},
	}
}

// dataError gives an error of datatool its exit code: 4 refused, 2 bad input, 1 otherwise.
func dataError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, datatool.ErrRefused):
		return cli.Exit(err.Error(), cmdline.ExitRefused)
	case errors.Is(err, datatool.ErrBadInput):
		return cli.Exit(err.Error(), cmdline.ExitUsage)
	}
	return cli.Exit(err.Error(), cmdline.ExitFailed)
}

// openDirs opens the stopped members' data directories, exit codes given.
func openDirs(paths []string, needStore bool) ([]*datatool.Dir, error) {
	dirs, err := datatool.OpenAll(paths, needStore)
	return dirs, dataError(err)
}

// dataDirs returns the --data-dir flags of a data command, checked: at least one, none
// named twice (the second open would find the first holding it); most > 0 caps how many.
func dataDirs(c *cli.Context, most int) ([]string, error) {
	dirs := c.StringSlice("data-dir")
	if len(dirs) == 0 {
		return nil, cmdline.Usagef("%s needs --data-dir DIR (a stopped member's data directory)", c.Command.FullName())
	}
	if most > 0 && len(dirs) > most {
		return nil, cmdline.Usagef("%s takes one --data-dir (got %d)", c.Command.FullName(), len(dirs))
	}
	seen := map[string]string{}
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, cmdline.Usagef("--data-dir %s: %v", dir, err)
		}
		if prev, ok := seen[abs]; ok {
			return nil, cmdline.Usagef("--data-dir %s is named twice (also as %s)", dir, prev)
		}
		seen[abs] = dir
	}
	return dirs, nil
}

// dataDirFlag is --data-dir of the data commands. It reads no environment variable: a
// command that changes a directory acts only on one the command line names.
func dataDirFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{Name: "data-dir", Usage: usage}
}

// dirName is how messages name a directory: its path and, when known, its member.
func dirName(d *datatool.Dir) string {
	if d.Peer == "" {
		return d.Path
	}
	return fmt.Sprintf("%s (member %s)", d.Path, cmdline.ShortID(d.Peer))
}

func dataInspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "list what a stopped member's store holds, per entity type",
		Description: `For each --data-dir (a stopped member's data directory; repeatable), per entity type: the
remembered shards, remembered entities and entity-state records stored, the tombstones
(deleted records kept so replicas agree: passivated entities, …), keys holding only a fence
floor (an entity that loaded its state but never saved one), and the keys and bytes of it
all (keys and values as stored, before Badger's compression); the shard units the member
holds as a replica (each shard's remembered entities and entity states live on a replica
set of sharding.store.replication-factor members), and entity states still in the layout
before replica sets ('shardctl data upgrade' moves them). Data not kept per type
(coordinator terms, directives, leases) and data of a kind this release does not know is
listed as other. --units lists every unit held, with its records. Refused (exit code 4)
while a sharddaemon holds a directory; ask a running cluster with 'shardctl stats' or
'shardctl store status' instead.
Example:
   shardctl data inspect --data-dir /tmp/a --data-dir /tmp/b
   shardctl data inspect --data-dir /tmp/a --units
   shardctl data inspect --data-dir /tmp/a --json`,
		Flags: []cli.Flag{
			dataDirFlag("a stopped member's data `DIR` (repeatable)"),
			&cli.BoolFlag{Name: "units", Usage: "list every shard unit held, with its records"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			paths, err := dataDirs(c, 0)
			if err != nil {
				return err
			}
			dirs, err := openDirs(paths, false)
			if err != nil {
				return err
			}
			defer datatool.CloseAll(dirs)
			var out []datatool.Inventory
			for _, d := range dirs {
				inv, err := datatool.Inspect(d, c.Bool("units"))
				if err != nil {
					return cmdline.Failf("%s: %v", d.Path, err)
				}
				out = append(out, inv)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, struct {
					DataDirs []datatool.Inventory `json:"data_dirs"`
				}{out})
			}
			for i, inv := range out {
				if i > 0 {
					fmt.Fprintln(c.App.Writer)
				}
				printInventory(c.App.Writer, inv)
			}
			return nil
		},
	}
}

func printInventory(w io.Writer, inv datatool.Inventory) {
	head := inv.DataDir
	if inv.Member != "" {
		head += " (member " + cmdline.ShortID(inv.Member) + ")"
	}
	if !inv.Store {
		fmt.Fprintf(w, "%s: no store yet\n", head)
		return
	}
	fmt.Fprintf(w, "%s: %d keys, %d bytes, %s\n", head, inv.Keys, inv.Bytes, layoutName(inv))
	if len(inv.Types) == 0 && len(inv.Other) == 0 {
		fmt.Fprintln(w, "  (empty)")
		return
	}
	t := cmdline.NewTable(w, "TYPE", "REMEMBERED SHARDS", "REMEMBERED ENTITIES", "ENTITY STATES", "TOMBSTONES", "FENCE-ONLY", "KEYS", "BYTES", "UNITS HELD", "OLD LAYOUT")
	old := 0
	for _, ti := range inv.Types {
		t.Row(ti.EntityType, strconv.Itoa(ti.RememberedShards), strconv.Itoa(ti.RememberedEntities), strconv.Itoa(ti.EntityStates),
			strconv.Itoa(ti.Tombstones), strconv.Itoa(ti.FenceOnly), strconv.Itoa(ti.Keys), strconv.FormatInt(ti.Bytes, 10),
			strconv.Itoa(ti.Units), strconv.Itoa(ti.OldLayoutStates))
		old += ti.OldLayoutStates
	}
	for _, o := range inv.Other {
		t.Row("(other "+o.Prefix+")", "-", "-", "-", "-", "-", strconv.Itoa(o.Keys), strconv.FormatInt(o.Bytes, 10), "-", "-")
	}
	t.Flush()
	if old > 0 {
		fmt.Fprintf(w, "%d entity states are in the layout before replica sets: a sharddaemon refuses this store until 'shardctl data upgrade --data-dir %s' moves them\n", old, inv.DataDir)
	}
	if len(inv.Units) > 0 {
		fmt.Fprintln(w)
		t := cmdline.NewTable(w, "TYPE", "SHARD", "RECORDS", "TOMBSTONES", "FENCE-ONLY")
		for _, u := range inv.Units {
			t.Row(u.EntityType, u.Shard, strconv.Itoa(u.Records), strconv.Itoa(u.Tombstones), strconv.Itoa(u.FenceOnly))
		}
		t.Flush()
	}
}

// layoutName names a store's key layout for people.
func layoutName(inv datatool.Inventory) string {
	if inv.Layout == 0 {
		return "no store-layout file (layout 1 if it holds entity states from before replica sets)"
	}
	return fmt.Sprintf("store layout %d", inv.Layout)
}

func dataBackupCommand() *cli.Command {
	return &cli.Command{
		Name:  "backup",
		Usage: "write a full backup of a stopped member's store to a file",
		Description: `Writes every record of the store in --data-dir (a stopped member's data directory) to
--out FILE in Badger's backup format ('-': standard output). Restore it with 'shardctl data
restore'. An existing FILE is not overwritten (exit code 2). Refused (exit code 4) while a
sharddaemon holds the directory.
Example:
   shardctl data backup --data-dir /tmp/a --out a-store.backup`,
		Flags: []cli.Flag{
			dataDirFlag("the stopped member's data `DIR`"),
			&cli.StringFlag{Name: "out", Usage: "the backup `FILE` to write ('-': standard output)"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			paths, err := dataDirs(c, 1)
			if err != nil {
				return err
			}
			out := c.String("out")
			if out == "" {
				return cmdline.Usagef("data backup needs --out FILE (or --out - for standard output)")
			}
			dirs, err := openDirs(paths, true)
			if err != nil {
				return err
			}
			d := dirs[0]
			defer d.Close()
			if out == "-" {
				return dataError(datatool.Backup(d, c.App.Writer))
			}
			size, err := datatool.BackupFile(d, out)
			if err != nil {
				return dataError(err)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, map[string]any{"data_dir": d.Path, "backup": out, "bytes": size})
			}
			fmt.Fprintf(c.App.Writer, "backed up the store of %s to %s (%d bytes)\n", dirName(d), out, size)
			return nil
		},
	}
}

func dataRestoreCommand() *cli.Command {
	return &cli.Command{
		Name:  "restore",
		Usage: "restore a backup into a stopped member's data directory",
		Description: `Loads --in FILE (written by 'shardctl data backup' or by remove-internal-data's automatic
backup) into the store of --data-dir, a stopped member's data directory (created if
missing). A directory that holds a store already is refused (exit code 4) unless
--replace, which moves that store aside to DIR/store.replaced-<time> first (delete it once
the restored member runs well). Refused (exit code 4) while a sharddaemon holds the
directory. Once the member runs again, anti-entropy brings it up to date with the other
members: a restore brings back what the others no longer hold only when every member's
directory is restored.
Example:
   shardctl data restore --data-dir /tmp/a --in /tmp/a/backups/store-20261123T171600Z.backup --replace`,
		Flags: []cli.Flag{
			dataDirFlag("the stopped member's data `DIR`"),
			&cli.StringFlag{Name: "in", Usage: "the backup `FILE` to load"},
			&cli.BoolFlag{Name: "replace", Usage: "move a store that is there aside instead of refusing"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			paths, err := dataDirs(c, 1)
			if err != nil {
				return err
			}
			in := c.String("in")
			if in == "" {
				return cmdline.Usagef("data restore needs --in FILE")
			}
			f, err := os.Open(in)
			if errors.Is(err, fs.ErrNotExist) {
				return cmdline.Usagef("--in %s: no such file", in)
			}
			if err != nil {
				return cmdline.Failf("--in %s: %v", in, err)
			}
			defer f.Close()
			if err := os.MkdirAll(paths[0], 0o700); err != nil {
				return cmdline.Failf("--data-dir %s: %v", paths[0], err)
			}
			dirs, err := openDirs(paths, false)
			if err != nil {
				return err
			}
			d := dirs[0]
			defer d.Close()
			res, err := datatool.Restore(d, f, c.Bool("replace"))
			if err != nil {
				return dataError(err)
			}
			res.Backup = in
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, res)
			}
			fmt.Fprintf(c.App.Writer, "restored %d keys (%d bytes) from %s into %s\n", res.Keys, res.Bytes, in, d.StorePath())
			if res.Replaced != "" {
				fmt.Fprintf(c.App.Writer, "the store that was there is in %s\n", res.Replaced)
			}
			return nil
		},
	}
}
