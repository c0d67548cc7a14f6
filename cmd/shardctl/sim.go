package main

import "github.com/urfave/cli/v2"

// simCommand groups the offline simulators.
func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "run offline simulations of shardmesh policies",
	}
}
