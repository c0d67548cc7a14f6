package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// listSome joins up to n items, noting how many more there are beyond them.
func listSome(items []string, n int, total int) string {
	n = max(n, 0)
	if len(items) > n {
		items = items[:n]
	}
	s := strings.Join(items, ", ")
	if more := total - len(items); more > 0 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("… (+%d)", more)
	}
	return cmdline.OrDash(s)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// epoch formats an allocation epoch as term.sequence.
func epoch(e uint64) string { return coordinator.Epoch(e).String() }

// progressOut is where progress lines go: stderr with --json, so stdout stays JSON.
func progressOut(c *cli.Context) io.Writer {
	if c.Bool("json") {
		return c.App.ErrWriter
	}
	return c.App.Writer
}

func shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = cmdline.ShortID(id)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
