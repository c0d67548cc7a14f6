package cmdline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/suggest"
)

// Conventions gives app, and every command in it, what both binaries share: an unknown
// command or flag is bad usage in one line (exit code 2) with the closest name ("did you
// mean"); `help [COMMAND...]`, --help, `version` and --version; `completion bash|zsh|fish`;
// `man [DIR]`. Call it once the app's commands are complete, before Run.
func Conventions(app *cli.App) {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit"}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, c.App.Name, c.App.Version) }
	app.Version = Version()
	// The help command is ours (unknown topics are bad usage, not urfave's exit code 3), and
	// only at the top: 'shardctl help shard move'.
	app.HideHelpCommand = true
	// urfave/cli gives the app --help only when it has no command named help: ours is, so
	// the flag is added here ('shardctl --help' would otherwise be an unknown flag).
	if !slices.ContainsFunc(app.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), "help") }) {
		app.Flags = append(app.Flags, cli.HelpFlag)
	}
	app.EnableBashCompletion = true
	app.Commands = append(app.Commands, helpCommand(), versionCommand(), completionCommand(), manCommand(app.Name))
	if app.Action == nil {
		app.Action = groupAction
	}
	app.OnUsageError = UsageError
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.HideHelpCommand = true
			if c.OnUsageError == nil {
				c.OnUsageError = UsageError
			}
			if len(c.Subcommands) > 0 && c.Action == nil {
				c.Action = groupAction
			}
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
}

// groupAction is the action of the app and of every command that only groups others: with
// no argument it shows the group's help; an argument is an unknown command.
func groupAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowSubcommandHelp(c)
	}
	return UnknownCommand(c, c.Args().First())
}

// UnknownCommand is the bad-usage error for name, given where a subcommand of c's command
// was expected, with the closest command name when one is near.
func UnknownCommand(c *cli.Context, name string) error {
	return Usagef("unknown command %q%s (see '%s --help')", Truncate(name, 80), didYouMean(name, commandNames(subcommands(c)), ""), helpName(c))
}

// subcommands are the commands c's command groups (the app's at the top).
func subcommands(c *cli.Context) []*cli.Command {
	if c.Command != nil && c.Command.Name != "" {
		return c.Command.Subcommands
	}
	return c.App.Commands
}

func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, cmd := range cmds {
		if !cmd.Hidden {
			names = append(names, cmd.Names()...)
		}
	}
	return names
}

// helpName is how the help of c's command is asked for: "shardctl shard move".
func helpName(c *cli.Context) string {
	if c.Command != nil && c.Command.HelpName != "" {
		return c.Command.HelpName
	}
	return c.App.HelpName
}

// UnknownFlag is the bad-usage error for flag a (as written, "--nodee"), which c's command
// does not define, with the closest flag name when one is near.
func UnknownFlag(c *cli.Context, a string) error { return unknownFlag(c, a, "") }

// unknownFlag is UnknownFlag with a hint after the pointer to --help.
func unknownFlag(c *cli.Context, a, hint string) error {
	name := strings.TrimLeft(a, "-")
	name, _, _ = strings.Cut(name, "=")
	var names []string
	for _, f := range commandFlags(c) {
		names = append(names, f.Names()...)
	}
	return Usagef("unknown flag %s%s (see '%s --help'%s)", Truncate(a, 80), didYouMean(name, names, "--"), helpName(c), hint)
}

func commandFlags(c *cli.Context) []cli.Flag {
	if c.Command != nil && c.Command.Name != "" {
		return c.Command.Flags
	}
	return c.App.Flags
}

// didYouMean is "; did you mean PREFIX+X?" with the name X closest to word, or "".
func didYouMean(word string, names []string, prefix string) string {
	best := suggest.Closest(word, names)
	if best == "" {
		return ""
	}
	if prefix == "--" && len(best) == 1 {
		prefix = "-"
	}
	return fmt.Sprintf("; did you mean %s%s?", prefix, best)
}

// flagNotDefined extracts the flag from the flag package's "flag provided but not defined:
// -x" error.
func flagNotDefined(err error) (string, bool) {
	const prefix = "flag provided but not defined: "
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return "", false
	}
	return "-" + strings.TrimPrefix(msg, prefix), true
}
