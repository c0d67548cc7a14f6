package cmdline

import (
	"fmt"
	"strings"
)

// roff writes a man page in the man(7) macros, one line at a time: macros as given, text
// escaped so that whatever a help text holds prints as written.
type roff struct{ b strings.Builder }

// macro writes a control line: .NAME and its arguments, each escaped, and quoted when it
// is empty or holds a space.
func (r *roff) macro(name string, args ...string) {
	r.b.WriteString("." + name)
	for _, a := range args {
		a = strings.ReplaceAll(roffEscape(a), `"`, `\(dq`)
		if a == "" || strings.Contains(a, " ") {
			a = `"` + a + `"`
		}
		r.b.WriteString(" " + a)
	}
	r.b.WriteByte('\n')
}

// text writes a line of text already escaped (roffEscape), with fonts and all; a line that
// would start with a control character (a dot or a single quote) is protected by \&.
func (r *roff) text(escaped string) {
	if strings.HasPrefix(escaped, ".") || strings.HasPrefix(escaped, "'") {
		r.b.WriteString(`\&`)
	}
	r.b.WriteString(escaped + "\n")
}

// plain writes s as a line of text, escaped.
func (r *roff) plain(s string) { r.text(roffEscape(s)) }

// comment writes a roff comment line: s as it is, up to the end of the line.
func (r *roff) comment(s string) { r.b.WriteString(`.\" ` + s + "\n") }

func (r *roff) String() string { return r.b.String() }

// roffEscape makes s print as written: a backslash is \e, a dash \- (the ASCII minus that
// options are typed with, which roff would otherwise print as a hyphen), a character outside
// ASCII \[uXXXX] (roff reads bytes as Latin-1) — but ␀, the store keys' separator, for which
// groff's fonts have no glyph, is \0 as C writes the 0 byte —, a tab a space; other control
// characters are dropped. The start of a line is text's concern.
func roffEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '␀':
			b.WriteString(`\e0`)
		case r == '-':
			b.WriteString(`\-`)
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f:
		case r > 0x7f:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// bold and italic escape s and set it in that font.
func bold(s string) string   { return `\fB` + roffEscape(s) + `\fR` }
func italic(s string) string { return `\fI` + roffEscape(s) + `\fR` }
