// Command shardctl operates a shardmesh cluster: it inspects members and shards, steers
// allocation, runs benchmarks and simulations, and opens the live dashboard.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// Exit codes, documented in docs/cli.md.
const (
	exitOK      = cmdline.ExitOK
	exitFailed  = cmdline.ExitFailed
	exitUsage   = cmdline.ExitUsage
	exitPartial = 3 // a member did not answer: the result is partial
	exitRefused = cmdline.ExitRefused
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run runs shardctl with args, writing to stdout and stderr, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	app := newApp()
	app.Writer, app.ErrWriter = stdout, stderr
	if err := app.Run(args); err != nil {
		fmt.Fprintln(stderr, "shardctl:", err)
		return cmdline.ExitCode(err, exitFailed)
	}
	return exitOK
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "shardctl",
		Usage: "operate a shardmesh cluster",
		Description: `shardctl talks to one member of a cluster over the authenticated admin protocol.
Name the member with --node MULTIADDR (or $SHARDMESH_NODE), or with --data-dir DIR of a
daemon running on this machine (its DIR/addrs file); --node PEER_ID names another member
through that one. Calls that change the cluster (shutdown, leave, down) need an admin
identity: --identity FILE, made by 'shardctl keygen admin' and listed in the daemons'
--admin-allow. Every command has --help with an example; docs/cli.md has the rest.

Exit codes: 0 ok, 1 failed, 2 bad usage, 3 partial result, 4 refused.`,
		Flags: globalFlags(),
		// Errors come back from Run so main prints them in one place, prefixed, and picks
		// the exit code (urfave's default handler would exit from inside Run).
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: append(networked(
			membersCommand(),
			typesCommand(),
			regionStateCommand(),
			statsCommand(),
			locateCommand(),
			healthCommand(),
			watchCommand(),
			tellCommand(),
			askCommand(),
			benchCommand(),
			shutdownCommand(),
			leaveCommand(),
			downCommand(),
			handoffsCommand(),
			historyCommand(),
			storeCommand(),
			auditCommand(),
			remindersCommand(),
			drainCommand(),
			undrainCommand(),
			shardCommand(),
			rebalanceCommand(),
			dashboardCommand(),
		), cmdline.Offline(
			shardIDCommand(),
			keygenCommand(),
			credentialCommand(),
			simCommand(),
			dataCommand(networked(dataRemoveCommand())...),
			removeInternalDataCommand(),
			contextCommand(),
		)...),
	}
	cmdline.Conventions(app)
	return app
}

// networked gives commands that talk to a member the global flags (so they work after the
// command name, as operators type them) and one-line usage errors.
func networked(cmds ...*cli.Command) []*cli.Command {
	for _, c := range cmds {
		for _, f := range globalFlags() {
			if !cmdline.HasFlag(c, f.Names()[0]) { // a command may give a flag its own default (--timeout)
				c.Flags = append(c.Flags, f)
			}
		}
		c.OnUsageError = cmdline.UsageError
		if before := c.Before; before != nil {
			c.Before = func(ctx *cli.Context) error {
				if err := globalSettings(ctx); err != nil {
					return err
				}
				return before(ctx)
			}
		} else {
			c.Before = globalSettings
		}
		c.Subcommands = networked(c.Subcommands...)
	}
	return cmds
}

// globalSettings settles a command's global flags: those written before the command, then
// those of the saved context (shardctl context) for what is still unset.
func globalSettings(c *cli.Context) error {
	if err := inheritGlobalFlags(c); err != nil {
		return err
	}
	return applyContext(c)
}

// inheritGlobalFlags gives a command the global flags written before it ("shardctl
// --data-dir /tmp/a stats"): each command defines them too, so that they also work after
// its name, and urfave/cli would otherwise read the command's own, unset, copy.
func inheritGlobalFlags(c *cli.Context) error {
	for _, f := range globalFlags() {
		name := f.Names()[0]
		if c.IsSet(name) {
			continue
		}
		for _, p := range c.Lineage()[1:] {
			if p.IsSet(name) {
				if err := c.Set(name, fmt.Sprint(p.Value(name))); err != nil {
					return cmdline.Usagef("invalid value for --%s: %v", name, err)
				}
				break
			}
		}
	}
	return nil
}
