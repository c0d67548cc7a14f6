// Command shardctl operates a shardmesh cluster: it inspects members and shards, steers
// allocation, runs benchmarks and simulations, and opens the live dashboard.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// Exit codes, documented in docs/cli.md.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitPartial = 3
	exitRefused = 4
)

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	if err := newApp().Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "shardctl:", err)
		return exitCode(err)
	}
	return exitOK
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "shardctl",
		Usage: "operate a shardmesh cluster",
		Description: `shardctl talks to one member of a cluster over the authenticated admin protocol.
Name the member with --node MULTIADDR (or $SHARDMESH_NODE), or with --data-dir DIR of a
daemon running on this machine (its DIR/addrs file).

Exit codes: 0 ok, 1 failed, 2 bad usage, 3 partial result, 4 refused.`,
		Flags:           globalFlags(),
		HideHelpCommand: true,
		// Errors come back from Run so main prints them in one place, prefixed, and picks
		// the exit code (urfave's default handler would exit from inside Run).
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: commands(
			membersCommand(),
			typesCommand(),
			tellCommand(),
			askCommand(),
			shardIDCommand(),
			keygenCommand(),
			simCommand(),
		),
		OnUsageError: usageError,
	}
}

// commands gives every command the global flags (so they work after the command name, as
// operators type them) and one-line usage errors.
func commands(cmds ...*cli.Command) []*cli.Command {
	for _, c := range cmds {
		c.Flags = append(c.Flags, globalFlags()...)
		c.OnUsageError = usageError
		c.Subcommands = commands(c.Subcommands...)
	}
	return cmds
}

// usageError reports bad usage in one line with exit code 2, pointing at --help.
func usageError(c *cli.Context, err error, _ bool) error {
	return cli.Exit(fmt.Sprintf("%v (see '%s --help')", err, c.Command.HelpName), exitUsage)
}

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return exitFailed
}
