package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/coordinator"
)

// printJSON writes v as indented JSON to w.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows aligned in columns under a header.
type table struct{ w *tabwriter.Writer }

func newTable(out io.Writer, header ...string) *table {
	t := &table{w: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.w, strings.Join(cells, "\t")) }
func (t *table) flush()              { t.w.Flush() }

// shortID shortens a peer id for tables: its last 8 characters.
func shortID(id string) string {
	if len(id) <= 10 {
		return id
	}
	return "…" + id[len(id)-8:]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listSome joins up to n items, noting how many more there are beyond them.
func listSome(items []string, n int, total int) string {
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
	return orDash(s)
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
		out[i] = shortID(id)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
