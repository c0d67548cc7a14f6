package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
)

// positional returns a command's positional arguments, which must number n, or at least -n
// when n is negative (described by usage, e.g. "TYPE ENTITY_ID"). Flags written after them, as operators do
// ("shardctl locate counter user-1 --json"), are applied as if written before; after "--"
// every argument is positional, even one that starts with a dash.
func positional(c *cli.Context, usage string, n int) ([]string, error) {
	pos, err := positionalArgs(c)
	if err != nil {
		return nil, err
	}
	if n < 0 && len(pos) >= -n { // n < 0: at least -n arguments
		return pos, nil
	}
	if len(pos) != n {
		if n == 0 {
			return nil, usagef("unexpected argument %q (%s takes flags only)", pos[0], c.Command.Name)
		}
		return nil, usagef("%s needs %s (got %d arguments; see 'shardctl %s --help')", c.Command.Name, usage, len(pos), c.Command.Name)
	}
	return pos, nil
}

// positionalArgs returns a command's positional arguments, however many, applying the
// flags written among them as positional does.
func positionalArgs(c *cli.Context) ([]string, error) {
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
			return nil, usagef("unknown flag %s (see 'shardctl %s --help'; write -- before an argument that starts with a dash)", a, c.Command.Name)
		}
		if !hasVal {
			if _, isBool := f.(*cli.BoolFlag); isBool {
				val = "true"
			} else {
				if i+1 >= len(args) {
					return nil, usagef("flag %s needs a value", a)
				}
				i++
				val = args[i]
			}
		}
		if err := c.Set(name, val); err != nil {
			return nil, usagef("invalid value %q for flag -%s: %v", val, name, err)
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

// typeFlags returns the entity types of --type (repeatable), checked, for a command that
// takes flags only.
func typeFlags(c *cli.Context) ([]string, error) {
	if _, err := positional(c, "", 0); err != nil {
		return nil, err
	}
	types := c.StringSlice("type")
	for _, t := range types {
		if err := admin.CheckTypeName(t); err != nil {
			return nil, usagef("--type: %v", err)
		}
	}
	return types, nil
}

// positiveFlag checks that duration flag name, when set, is positive.
func positiveFlag(c *cli.Context, name string) error {
	if c.IsSet(name) && c.Duration(name) <= 0 {
		return usagef("--%s %v: must be positive", name, c.Duration(name))
	}
	return nil
}
