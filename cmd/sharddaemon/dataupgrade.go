package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/datatool"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/shard"
)

// data upgrade: a store from before replica sets (datatool/upgrade.go).

func dataUpgradeCommand() *cli.Command {
	return &cli.Command{
		Name:  "upgrade",
		Usage: "move a stopped member's entity states from the layout before replica sets under their shards",
		Description: `Releases before replica sets kept an entity's durable state under st␀TYPE␀ENTITY; this
release keeps it under its shard (st␀TYPE␀SHARD␀ENTITY), so that it lives on the shard's
replica set, and a sharddaemon refuses a store that still holds the old keys. This command
moves them, on each --data-dir (a stopped member's data directory; repeatable: run it on
every member's), record, version, tombstone and fence floor as they are, then writes the
directory's store-layout file; the daemon starts on it afterwards.

The shard of each entity is computed as the cluster computes it: Akka's extractor
(abs(hashCode) % number-of-shards) or, with --shardcake, Shardcake's, over
sharding.number-of-shards — from --number-of-shards, else from the daemon's --config file
and SHARDMESH_SHARDING_NUMBER_OF_SHARDS, else 1000. Use the cluster's value: state moved
under another shard than its entity's is not found. Entity types with a custom extractor
are upgraded from Go with datatool.Upgrade.

Running it again moves nothing; stopped halfway, it moves the rest when run again.
--dry-run counts what it would move. Progress goes to stderr. Refused (exit code 4) while
a sharddaemon holds a directory; a directory of a newer layout is bad input (exit code 2).
Example:
   shardctl data upgrade --data-dir /tmp/a --data-dir /tmp/b --data-dir /tmp/c
   shardctl data upgrade --data-dir /var/lib/shardmesh --config /etc/shardmesh.yaml
   shardctl data upgrade --data-dir /tmp/a --number-of-shards 100 --dry-run`,
		Flags: []cli.Flag{
			dataDirFlag("a stopped member's data `DIR` (repeatable; name every member's)"),
			&cli.IntFlag{Name: "number-of-shards", Usage: "the cluster's sharding.number-of-shards (`N`; default: from --config, the environment, else 1000)"},
			&cli.StringFlag{Name: "config", Usage: "the daemon's configuration `FILE`, for sharding.number-of-shards"},
			&cli.BoolFlag{Name: "shardcake", Usage: "the types use Shardcake's extractor, abs(hashCode % n) + 1, instead of Akka's"},
			&cli.BoolFlag{Name: "dry-run", Usage: "count what would move; change nothing"},
		},
		Action: dataUpgrade,
	}
}

func dataUpgrade(c *cli.Context) error {
	if _, err := cmdline.Positional(c, "", 0); err != nil {
		return err
	}
	paths, err := dataDirs(c, 0)
	if err != nil {
		return err
	}
	ex, err := upgradeExtractor(c)
	if err != nil {
		return err
	}
	dryRun := c.Bool("dry-run")
	var out []datatool.UpgradeResult
	for _, path := range paths {
		res, err := upgradeDir(path, ex, dryRun, c.App.ErrWriter)
		if err != nil {
			return err
		}
		out = append(out, res)
	}
	if c.Bool("json") {
		return cmdline.PrintJSON(c.App.Writer, struct {
			NumberOfShards int                      `json:"number_of_shards"`
			Extractor      string                   `json:"extractor"`
			DataDirs       []datatool.UpgradeResult `json:"data_dirs"`
		}{ex.NumberOfShards(), extractorName(c), out})
	}
	for _, res := range out {
		printUpgrade(c.App.Writer, res, ex, extractorName(c))
	}
	return nil
}

// upgradeDir upgrades one directory, its progress on w.
func upgradeDir(path string, ex shard.Extractor, dryRun bool, w io.Writer) (datatool.UpgradeResult, error) {
	d, err := datatool.Open(path, false)
	if err != nil {
		return datatool.UpgradeResult{}, dataError(err)
	}
	defer d.Close()
	res, err := datatool.Upgrade(d, datatool.ExtractorShardOf(ex), dryRun, func(moved, found int) {
		fmt.Fprintf(w, "%s: moved %d of %d entity states\n", dirName(d), moved, found)
	})
	return res, dataError(err)
}

// upgradeExtractor is the extractor the flags and the configuration name.
func upgradeExtractor(c *cli.Context) (shard.Extractor, error) {
	n := c.Int("number-of-shards")
	if !c.IsSet("number-of-shards") {
		cfg, err := config.Load(config.Sources{File: c.String("config"), LookupEnv: os.LookupEnv})
		if err != nil {
			return nil, cmdline.Usagef("%v", err)
		}
		n = cfg.Sharding.NumberOfShards
	}
	var ex shard.Extractor
	var err error
	if c.Bool("shardcake") {
		ex, err = shard.NewShardcakeExtractor(n)
	} else {
		ex, err = shard.NewHashCodeExtractor(n)
	}
	if err != nil {
		return nil, cmdline.Usagef("--number-of-shards: %v", err)
	}
	return ex, nil
}

func extractorName(c *cli.Context) string {
	if c.Bool("shardcake") {
		return "shardcake"
	}
	return "akka"
}

func printUpgrade(w io.Writer, res datatool.UpgradeResult, ex shard.Extractor, extractor string) {
	head := res.DataDir
	if res.Member != "" {
		head += " (member " + cmdline.ShortID(res.Member) + ")"
	}
	types := strings.Join(res.Types, ", ")
	switch {
	case res.DryRun && res.Found == 0:
		fmt.Fprintf(w, "%s: nothing to move (store layout %d)\n", head, res.Layout)
	case res.DryRun:
		fmt.Fprintf(w, "%s: would move %d entity states of %s under their shards (%s's extractor, number-of-shards %d)\n", head, res.Found, types, extractor, ex.NumberOfShards())
	case res.Found == 0:
		fmt.Fprintf(w, "%s: nothing to move; store layout %d (%s written)\n", head, res.Layout, datadir.LayoutFile)
	default:
		fmt.Fprintf(w, "%s: moved %d entity states of %s under their shards (%s's extractor, number-of-shards %d); store layout %d (%s written)\n",
			head, res.Moved, types, extractor, ex.NumberOfShards(), res.Layout, datadir.LayoutFile)
	}
}
