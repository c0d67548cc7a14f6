package cmdline

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// PrintJSON writes v as indented JSON to w.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table writes rows aligned in columns under a header.
type Table struct{ w *tabwriter.Writer }

// NewTable starts a table on out, with header as its first row when given.
func NewTable(out io.Writer, header ...string) *Table {
	t := &Table{w: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.Row(header...)
	}
	return t
}

// Row adds a row.
func (t *Table) Row(cells ...string) { fmt.Fprintln(t.w, strings.Join(cells, "\t")) }

// Flush writes the table out.
func (t *Table) Flush() { t.w.Flush() }

// ShortID shortens a peer id for tables: its last 8 characters.
func ShortID(id string) string {
	if len(id) <= 10 {
		return id
	}
	return "…" + id[len(id)-8:]
}

// Truncate cuts s to n bytes, marking the cut: how an argument too long to repeat whole is
// named in an error.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// OrDash is s, or "-" when s is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Plural is "1 one" or "n many".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// QuoteAll quotes each of ss and joins them with commas.
func QuoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
