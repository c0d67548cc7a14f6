package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/datatool"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// data verify and data rebuild: a damaged store (docs/storage.md).

func dataVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check every file of a stopped member's store: would it start, or what is damaged",
		Description: `Reads every file of the store in each --data-dir (a stopped member's data directory;
repeatable) without opening it: the MANIFEST, every table block by block, the write-ahead
memtables and value logs entry by entry. It lists the damaged files (truncated, garbled,
missing) — what a member refuses to start with — and says whether the store still refills
from its peers after a rebuild, and which damaged stores earlier rebuilds kept. Exit code
0 when every store is sound, 1 when one is damaged (or could not be read); refused (exit
code 4) while a sharddaemon holds a directory.
Example:
   shardctl data verify --data-dir /tmp/a
   shardctl data verify --data-dir /tmp/a --data-dir /tmp/b --json`,
		Flags: []cli.Flag{dataDirFlag("a stopped member's data `DIR` (repeatable)")},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			paths, err := dataDirs(c, 0)
			if err != nil {
				return err
			}
			var out []datatool.Verification
			damaged := 0
			for _, path := range paths {
				d, err := datatool.Lock(path)
				if err != nil {
					return dataError(err)
				}
				v, err := datatool.Verify(d)
				d.Close()
				if err != nil {
					return cmdline.Failf("%s: %v", path, err)
				}
				if len(v.Damaged) > 0 {
					damaged++
				}
				out = append(out, v)
			}
			if c.Bool("json") {
				if err := cmdline.PrintJSON(c.App.Writer, struct {
					DataDirs []datatool.Verification `json:"data_dirs"`
				}{out}); err != nil {
					return err
				}
			} else {
				for _, v := range out {
					printVerification(c.App.Writer, v)
				}
			}
			if damaged > 0 {
				return cli.Exit(fmt.Sprintf("%d of %d stores damaged: 'shardctl data rebuild --data-dir DIR' moves a damaged one aside (kept) so that its member refills it from its peers", damaged, len(out)), cmdline.ExitFailed)
			}
			return nil
		},
	}
}

func printVerification(w io.Writer, v datatool.Verification) {
	head := v.DataDir
	if v.Member != "" {
		head += " (member " + cmdline.ShortID(v.Member) + ")"
	}
	switch {
	case !v.Store:
		fmt.Fprintf(w, "%s: no store (the member starts with an empty one)\n", head)
	case len(v.Damaged) == 0:
		fmt.Fprintf(w, "%s: sound: %d tables (%d bytes) checked block by block, %d logs (%d bytes of write-ahead entries) entry by entry\n",
			head, v.Tables, v.TableBytes, v.Logs, v.LogBytes)
	default:
		fmt.Fprintf(w, "%s: DAMAGED: the member does not start with this store\n", head)
		for _, d := range v.Damaged {
			fmt.Fprintf(w, "  %s: %s\n", d.File, d.Problem)
		}
	}
	if v.Refilling != "" {
		fmt.Fprintf(w, "  refills from its peers when it starts (%s)\n", v.Refilling)
	}
	if len(v.Aside) > 0 {
		fmt.Fprintf(w, "  damaged stores kept from earlier rebuilds: %s\n", strings.Join(v.Aside, ", "))
	}
}

func dataRebuildCommand() *cli.Command {
	return &cli.Command{
		Name:  "rebuild",
		Usage: "move a stopped member's damaged store aside, so that it refills from its peers",
		Description: `Checks the store in --data-dir (a stopped member's data directory) as 'data verify'
does, moves it to DIR/store.damaged-<time> (kept, not deleted: delete it once the member
runs well) and marks the member for a refill. Started again, the member joins with an
empty store and refills it from its peers before its answers count in reads ('shardctl
health' says "refilling" until then). Refused (exit code 4) when the store checks out or
the member was last Up in a cluster of one (no peer holds a copy of its data) unless
--force, and while a sharddaemon holds the directory. Setting store.rebuild-damaged on the
daemon does the same by itself at start.
Example:
   shardctl data rebuild --data-dir /tmp/a && sharddaemon --data-dir /tmp/a ...`,
		Flags: []cli.Flag{
			dataDirFlag("the stopped member's data `DIR`"),
			&cli.BoolFlag{Name: "force", Usage: "rebuild a store that checks out, or one no peer holds a copy of"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			paths, err := dataDirs(c, 1)
			if err != nil {
				return err
			}
			d, err := datatool.Lock(paths[0])
			if err != nil {
				return dataError(err)
			}
			defer d.Close()
			res, err := datatool.Rebuild(d, c.Bool("force"))
			if err != nil {
				return dataError(err)
			}
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, res)
			}
			for _, dmg := range res.Damaged {
				fmt.Fprintf(c.App.Writer, "damaged: %s: %s\n", dmg.File, dmg.Problem)
			}
			if res.MovedTo != "" {
				fmt.Fprintf(c.App.Writer, "moved the store of %s to %s (kept: delete it once the member runs well)\n", dirName(d), res.MovedTo)
			}
			fmt.Fprintf(c.App.Writer, "start the member: it refills its store from its peers before its answers count in reads ('shardctl health' shows the refill)\n")
			return nil
		},
	}
}
