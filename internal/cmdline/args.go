package cmdline

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Positional returns a command's positional arguments, which must number n, or at least -n
// when n is negative (described by usage, e.g. "TYPE ENTITY_ID"). Flags written after them,
// as operators do ("shardctl locate counter user-1 --json"), are applied as if written
// before; after "--" every argument is positional, even one that starts with a dash.
func Positional(c *cli.Context, usage string, n int) ([]string, error) {
	pos, err := PositionalArgs(c)
	if err != nil {
		return nil, err
	}
	if n < 0 && len(pos) >= -n { // n < 0: at least -n arguments
		return pos, nil
	}
	if len(pos) != n {
		if n == 0 {
			return nil, Usagef("unexpected argument %q (%s takes flags only)", pos[0], c.Command.Name)
		}
		return nil, Usagef("%s needs %s (got %d arguments; see '%s --help')", c.Command.Name, usage, len(pos), c.Command.HelpName)
	}
	return pos, nil
}

// PositionalArgs returns a command's positional arguments, however many, applying the
// flags written among them as Positional does.
func PositionalArgs(c *cli.Context) ([]string, error) {
	args := c.Args().Slice()
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		name, ok := flagName(a)
		if !ok {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(name, "=")
		f := commandFlag(c, name)
		if f == nil {
			return nil, unknownFlag(c, a, "; write -- before an argument that starts with a dash")
		}
		if !hasVal {
			if _, isBool := f.(*cli.BoolFlag); isBool {
				val = "true"
			} else {
				if i+1 >= len(args) {
					return nil, Usagef("flag %s needs a value", a)
				}
				i++
				val = args[i]
			}
		}
		if err := c.Set(name, val); err != nil {
			return nil, Usagef("invalid value %q for flag -%s: %v", val, name, err)
		}
	}
	return pos, nil
}

// flagName returns the name of an argument that is a flag ("--json", "-y", "--type=x").
func flagName(a string) (string, bool) {
	if name, ok := strings.CutPrefix(a, "--"); ok && name != "" {
		return name, true
	}
	if name, ok := strings.CutPrefix(a, "-"); ok && name != "" {
		return name, true
	}
	return "", false
}

// commandFlag finds a flag of the command by any of its names.
func commandFlag(c *cli.Context, name string) cli.Flag {
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// Offline gives commands that need no member, and their subcommands, --json (those that
// act and have none) and one-line usage errors.
func Offline(cmds ...*cli.Command) []*cli.Command {
	for _, c := range cmds {
		if !HasFlag(c, "json") && c.Action != nil {
			c.Flags = append(c.Flags, &cli.BoolFlag{Name: "json", Usage: "print JSON instead of tables"})
		}
		c.OnUsageError = UsageError
		c.Subcommands = Offline(c.Subcommands...)
	}
	return cmds
}

// HasFlag reports whether command c defines flag name.
func HasFlag(c *cli.Command, name string) bool {
	return slices.ContainsFunc(c.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) })
}

// PositiveFlag checks that duration flag name, when set, is positive.
func PositiveFlag(c *cli.Context, name string) error {
	if c.IsSet(name) && c.Duration(name) <= 0 {
		return Usagef("--%s %v: must be positive", name, c.Duration(name))
	}
	return nil
}

// Confirm asks question on the terminal and reads y or n. Without a terminal (or with
// input that is not one) it is bad usage: the caller must say --yes.
func Confirm(c *cli.Context, question string) (bool, error) {
	if err := NeedTerminal(c); err != nil {
		return false, err
	}
	fmt.Fprintf(c.App.ErrWriter, "%s [y/N] ", question)
	line, err := bufio.NewReader(input(c)).ReadString('\n')
	if err != nil && err != io.EOF {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// NeedTerminal is bad usage when a command would need confirmation and its input is not a
// terminal: a command that changes something says so before it opens anything.
func NeedTerminal(c *cli.Context) error {
	if f, ok := input(c).(*os.File); ok && !term.IsTerminal(int(f.Fd())) {
		return Usagef("%s needs confirmation and stdin is not a terminal: pass --yes", c.Command.Name)
	}
	return nil
}

func input(c *cli.Context) io.Reader {
	if c.App.Reader != nil {
		return c.App.Reader
	}
	return os.Stdin
}
