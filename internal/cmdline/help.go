package cmdline

import (
	"github.com/urfave/cli/v2"
)

// helpCommand is `help [COMMAND...]`: the help of the program or of a command, as --help
// shows it. An unknown command is bad usage with the closest name.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the commands, or the help of one (as --help does)",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Description: `Example:
   shardctl help
   shardctl help shard move`,
		Action: func(c *cli.Context) error {
			path := c.Args().Slice()
			if len(path) == 0 {
				return cli.ShowAppHelp(c)
			}
			cmds := c.App.Commands
			for i, name := range path {
				var found *cli.Command
				for _, cmd := range cmds {
					if cmd.HasName(name) && !cmd.Hidden {
						found = cmd
					}
				}
				if found == nil {
					return Usagef("unknown command %q%s (see '%s --help')", Truncate(name, 80), didYouMean(name, commandNames(cmds), ""), helpPath(c.App.HelpName, path[:i]))
				}
				if i == len(path)-1 {
					// Run the command with --help: urfave prints its help with the full name,
					// its flags and subcommands, exactly as '... --help' does.
					args := append([]string{c.App.Name}, path...)
					return c.App.Run(append(args, "--help"))
				}
				cmds = found.Subcommands
			}
			return nil
		},
	}
}

func helpPath(app string, path []string) string {
	for _, p := range path {
		app += " " + p
	}
	return app
}
