package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/config/value"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/internal/suggest"
)

// configCommand is config (the keys), config check FILE and config show.
func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "list every configuration key; check a config file; show the configuration in effect",
		Description: `Without a subcommand: every key with its meaning, default, environment variable and flag.
'config check FILE' validates a config file on its own (no environment, no flags): one
line per problem naming the key, the value, the file and what is allowed; exit code 2 when
there are problems, 0 when there are none.
'config show' prints the configuration a daemon would run with, given the same --config,
SHARDMESH_* variables and flags: every key, its value and where it came from (the file,
the environment, a flag, or the default).
Exit codes: 0 done (no problems), 1 failed, 2 bad usage or problems in the configuration.
Example:
   sharddaemon config check /etc/shardmesh/shardmesh.yaml
   sharddaemon config show --config /etc/shardmesh/shardmesh.yaml --data-dir /var/lib/shardmesh`,
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return cmdline.Usagef("unknown command 'config %s' (check, show; see '%s --help')", cmdline.Truncate(c.Args().First(), 80), c.Command.HelpName)
			}
			return listKeys(c)
		},
		Subcommands: cmdline.Offline(configCheckCommand(), configShowCommand()),
	}
}

func listKeys(c *cli.Context) error {
	w := c.App.Writer
	for _, k := range config.Schema {
		fmt.Fprintf(w, "%s\n    %s\n    env %s", k.Path, k.Usage, k.Env())
		if k.Flag != "" {
			fmt.Fprintf(w, ", flag --%s", k.Flag)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "cluster.role.<role>.min-nr-of-members\n    members with that role needed before any is moved Up")
	return nil
}

func configCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "validate a config file: one line per problem, exit code 2 when there are any",
		ArgsUsage: "FILE",
		Description: `Reads FILE (YAML, TOML or JSON) as sharddaemon --config would, without the environment
or flags, and checks every key and value: unknown keys (with the closest known one), values
out of range, settings that contradict each other, unknown built-in entity types. It does
not open the files the config names (cluster-key) nor bind addresses.
Example:
   sharddaemon config check deploy/shardmesh.yaml && echo ok`,
		Action: func(c *cli.Context) error {
			pos, err := cmdline.Positional(c, "FILE", 1)
			if err != nil {
				return err
			}
			file := pos[0]
			if _, err := os.Stat(file); err != nil {
				return cmdline.Usagef("config check: %v", err)
			}
			cfg, err := config.Load(config.Sources{File: file})
			problems := append(lines(err), lines(checkEntityTypes(cfg))...)
			if c.Bool("json") {
				if perr := cmdline.PrintJSON(c.App.Writer, map[string]any{"file": file, "ok": len(problems) == 0, "problems": nonNil(problems)}); perr != nil {
					return perr
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(c.App.Writer, p)
				}
			}
			if len(problems) > 0 {
				return cli.Exit(fmt.Sprintf("config check: %s: %s", file, cmdline.Plural(len(problems), "problem", "problems")), cmdline.ExitUsage)
			}
			if !c.Bool("json") {
				fmt.Fprintf(c.App.Writer, "%s: ok\n", file)
			}
			return nil
		},
	}
}

func configShowCommand() *cli.Command {
	var flags []cli.Flag
	for _, f := range daemonFlags() {
		if !slices.Contains(f.Names(), "entity-journal") { // not configuration
			flags = append(flags, f)
		}
	}
	return &cli.Command{
		Name:  "show",
		Usage: "print the configuration in effect: every key, its value and where it came from",
		Description: `Merges the defaults, the --config file, SHARDMESH_* variables and the flags given here
exactly as the daemon does (flags win over the environment, which wins over the file), and
prints every key with its value and its origin. With problems, prints them instead, one per
line, and exits with code 2.
Example:
   SHARDMESH_LOG_LEVEL=debug sharddaemon config show --config shardmesh.yaml --set sharding.number-of-shards=300
   sharddaemon config show --config shardmesh.yaml --json | jq '.[] | select(.origin != "default")'`,
		Flags: flags,
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			cfg, err := config.Load(configSources(c))
			problems := append(lines(err), lines(checkEntityTypes(cfg))...)
			if len(problems) > 0 {
				for _, p := range problems {
					fmt.Fprintln(c.App.ErrWriter, p)
				}
				return cli.Exit(fmt.Sprintf("config show: %s", cmdline.Plural(len(problems), "problem", "problems")), cmdline.ExitUsage)
			}
			settings := cfg.Settings()
			if c.Bool("json") {
				return cmdline.PrintJSON(c.App.Writer, settings)
			}
			t := cmdline.NewTable(c.App.Writer, "KEY", "VALUE", "ORIGIN")
			for _, s := range settings {
				t.Row(s.Key, cmdline.OrDash(s.Value), s.Origin)
			}
			t.Flush()
			return nil
		},
	}
}

// checkEntityTypes checks that every type of entity-types is a built-in one.
func checkEntityTypes(cfg config.Config) error {
	var errs []error
	for _, name := range cfg.Node.EntityTypes {
		if !slices.Contains(builtinNames, name) {
			errs = append(errs, &value.Error{Key: "entity-types", Value: name, Source: cfg.Origin("entity-types"),
				Allowed: fmt.Sprintf("unknown built-in type %q%s (%s)", name, suggest.DidYouMean(name, builtinNames), strings.Join(builtinNames, ", "))})
		}
	}
	return errors.Join(errs...)
}

// lines flattens a joined error into one line per problem.
func lines(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, lines(e)...)
		}
		return out
	}
	return []string{strings.ReplaceAll(err.Error(), "\n", "; ")}
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
