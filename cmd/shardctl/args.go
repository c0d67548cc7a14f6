package main

import (
	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// typeFlags returns the entity types of --type (repeatable), checked, for a command that
// takes flags only.
func typeFlags(c *cli.Context) ([]string, error) {
	if _, err := cmdline.Positional(c, "", 0); err != nil {
		return nil, err
	}
	types := c.StringSlice("type")
	for _, t := range types {
		if err := admin.CheckTypeName(t); err != nil {
			return nil, cmdline.Usagef("--type: %v", err)
		}
	}
	return types, nil
}
