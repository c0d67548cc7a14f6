// Command shardctl operates a shardmesh cluster: it inspects members and shards, steers
// allocation, runs benchmarks and simulations, and opens the live dashboard.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "shardctl:", err)
		os.Exit(exitCode(err))
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "shardctl",
		Usage: "operate a shardmesh cluster",
		Commands: []*cli.Command{
			simCommand(),
		},
	}
}

// exitCode maps an error to the documented exit codes: 1 failed, 2 bad usage.
func exitCode(err error) int {
	if ec, ok := err.(cli.ExitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
