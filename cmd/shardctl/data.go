package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// The offline data commands (data inspect, backup, restore, verify, rebuild, upgrade and
// remove-internal-data) open stopped members' stores, which takes Badger, and the capacity
// simulator (sim cluster) runs the member's machines (engine). shardctl links neither: they
// run in sharddaemon, the binary that writes those directories (its data.go, sim.go), which
// shardctl executes in its own place with the same arguments. Their help, exit codes and
// output are sharddaemon's, under shardctl's name.

// dataCommand is data inspect|backup|restore (offline, in sharddaemon) and the networked
// commands given (data remove, through a running cluster).
func dataCommand(networked ...*cli.Command) *cli.Command {
	return &cli.Command{
		Name:  "data",
		Usage: "inspect, back up, restore, verify, rebuild and upgrade stopped members' data directories; remove a stopped type's data",
		Description: `Offline tools for the store (remembered shards and entities, durable entity state) in
a stopped member's data directory: inspect, backup, restore, verify, rebuild, upgrade. They refuse
(exit code 4) a directory a running sharddaemon holds, and run in sharddaemon (the one
beside shardctl, or on $PATH), which owns the data directory's format. 'data remove'
removes a stopped type's data through a running cluster; to remove it from stopped
members' directories, see 'shardctl remove-internal-data'.
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
		Subcommands: append([]*cli.Command{
			daemonCommand("inspect", "list what a stopped member's store holds, per entity type", "data", "inspect"),
			daemonCommand("backup", "write a full backup of a stopped member's store to a file", "data", "backup"),
			daemonCommand("restore", "restore a backup into a stopped member's data directory", "data", "restore"),
			daemonCommand("verify", "check every file of a stopped member's store: would it start, or what is damaged", "data", "verify"),
			daemonCommand("rebuild", "move a stopped member's damaged store aside, so that it refills from its peers", "data", "rebuild"),
			daemonCommand("upgrade", "move a stopped member's entity states from the layout before replica sets under their shards", "data", "upgrade"),
		}, networked...),
	}
}

func removeInternalDataCommand() *cli.Command {
	return daemonCommand("remove-internal-data", "remove the sharding data of entity types from stopped members' data directories", "remove-internal-data")
}

// daemonCommand is a command that sharddaemon runs: `sharddaemon path… ARGS…`, every
// argument (--help included) passed as given. Its description is for its man page only
// (--help is sharddaemon's): it points at sharddaemon's page of the same command.
func daemonCommand(name, usage string, path ...string) *cli.Command {
	cmd := strings.Join(path, " ")
	return &cli.Command{
		Name:  name,
		Usage: usage + " (runs in sharddaemon)",
		Description: "Runs 'sharddaemon " + cmd + "' (the sharddaemon beside shardctl, or on $PATH) with the\n" +
			"arguments given: sharddaemon owns the data directory's format and links the store. Its\n" +
			"options, examples and exit codes are that command's; 'shardctl " + cmd + " --help' shows them.",
		SkipFlagParsing: true,
		HideHelp:        true,
		Action: func(c *cli.Context) error {
			return execDaemon(append(path, c.Args().Slice()...))
		},
	}
}

// daemonName is the program that runs shardctl's offline data commands and its capacity
// simulator (sim cluster).
const daemonName = "sharddaemon"

// execDaemon replaces this process with sharddaemon running args, as "shardctl": its
// output, exit code and signals are the command's. It returns only when it cannot.
func execDaemon(args []string) error {
	path, err := findDaemon()
	if err != nil {
		return cli.Exit(err.Error(), exitFailed)
	}
	err = syscall.Exec(path, append([]string{"shardctl"}, args...), os.Environ())
	return cli.Exit(fmt.Sprintf("run %s: %v", path, err), exitFailed)
}

// findDaemon finds sharddaemon: beside this shardctl first (the same release, as
// installed together), then on $PATH.
func findDaemon() (string, error) {
	var beside string
	if self, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		beside = filepath.Join(filepath.Dir(self), daemonName)
		if st, err := os.Stat(beside); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	path, err := exec.LookPath(daemonName)
	if err == nil {
		return path, nil
	}
	if beside == "" || !errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("this command runs in %s, which holds the member's store and machines: %v", daemonName, err)
	}
	return "", fmt.Errorf("this command runs in %s, which holds the member's store and machines, and there is none beside shardctl (%s) nor on $PATH: install the %s of this release", daemonName, beside, daemonName)
}
