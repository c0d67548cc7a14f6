package cmdline

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// helpText is a command's help description as its man page shows it: the prose, the
// examples and the exit codes, read from the conventions every description follows. A line
// that starts with "Example" opens the examples (its own text, after "Example:" or
// "Example,", introduces them); the indented lines after it are the commands, and the first
// line that is not indented ends them. A line that starts with "Exit code" opens a paragraph
// of exit codes, the command's whole list; a sentence in the prose that starts so documents
// some of them, and its parent's list the others.
type helpText struct {
	body     []block  // DESCRIPTION: the description but its examples and its paragraphs of exit codes
	examples []block  // EXAMPLES
	exit     []string // the paragraphs of exit codes
	exitNote []string // the sentences in the prose that document exit codes
}

// block is a paragraph, filled when the page is set, or lines indented in the help,
// kept as written.
type block struct {
	lines    []string
	verbatim bool
}

var (
	exampleLine   = regexp.MustCompile(`^Examples?\b[,:]?\s*(.*)$`)
	exitSentence  = regexp.MustCompile(`(?:^|[.;]\s+)(Exit codes?\b.*?\.)(?:\s|$)`)
	exitListStart = regexp.MustCompile(`^Exit codes?:?\s+`)
	exitListSep   = regexp.MustCompile(`[,;]\s+(?:and\s+|or\s+)?\d\b`)
	exitItem      = regexp.MustCompile(`^(\d)\b:?\s*(.*)$`)
	sentenceEnd   = regexp.MustCompile(`\.(?:\s|$)`)
)

// parseHelp reads a description.
func parseHelp(desc string) helpText {
	var h helpText
	var cur *block
	dest := &h.body
	flush := func() {
		if cur != nil {
			*dest = append(*dest, *cur)
			cur = nil
		}
	}
	add := func(to *[]block, verbatim bool, line string) {
		if cur == nil || cur.verbatim != verbatim || dest != to {
			flush()
			dest, cur = to, &block{verbatim: verbatim}
		}
		cur.lines = append(cur.lines, line)
	}
	inExample := false
	lines := strings.Split(desc, "\n")
	for i, line := range lines {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
			// A blank line inside the examples keeps them open when commands follow.
			inExample = inExample && nextIndented(lines[i+1:])
		case exampleLine.MatchString(line):
			flush()
			inExample = true
			if intro := exampleLine.FindStringSubmatch(line)[1]; intro != "" {
				add(&h.examples, false, capitalize(intro))
				flush()
			}
		case line[0] == ' ' || line[0] == '\t':
			if inExample {
				add(&h.examples, true, line)
			} else {
				add(&h.body, true, line)
			}
		default:
			inExample = false
			if strings.HasPrefix(line, "Exit code") {
				flush() // a line of exit codes opens a paragraph of its own
			}
			add(&h.body, false, strings.TrimSpace(line))
		}
	}
	flush()
	h.body = slices.DeleteFunc(h.body, func(b block) bool {
		if b.verbatim {
			return false
		}
		text := strings.Join(b.lines, " ")
		if strings.HasPrefix(text, "Exit code") {
			h.exit = append(h.exit, text) // a paragraph of its own: EXIT STATUS alone says it
			return true
		}
		for _, m := range exitSentence.FindAllStringSubmatch(text, -1) {
			h.exitNote = append(h.exitNote, m[1]) // part of the prose: said in both places
		}
		return false
	})
	return h
}

// nextIndented reports whether the first line with text in lines is indented.
func nextIndented(lines []string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return l[0] == ' ' || l[0] == '\t'
		}
	}
	return false
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// exitCode is one exit code and what it means.
type exitCode struct {
	code    int
	meaning string
}

// exitCodes reads a sentence such as "Exit codes: 0 ok, 1 failed, 2 bad usage." as a list
// of codes; rest is the text after that sentence. ok is false when s is not such a list.
func exitCodes(s string) (codes []exitCode, rest string, ok bool) {
	start := exitListStart.FindStringIndex(s)
	if start == nil {
		return nil, s, false
	}
	list := s[start[1]:]
	if end := sentenceEnd.FindStringIndex(list); end != nil {
		list, rest = list[:end[0]], strings.TrimSpace(list[end[1]:])
	}
	from := 0
	for _, sep := range append(exitListSep.FindAllStringIndex(list, -1), []int{len(list), len(list)}) {
		item := strings.TrimLeft(list[from:sep[0]], ",; ")
		item = strings.TrimPrefix(strings.TrimPrefix(item, "and "), "or ")
		m := exitItem.FindStringSubmatch(item)
		if m == nil {
			return nil, s, false
		}
		code, _ := strconv.Atoi(m[1])
		codes = append(codes, exitCode{code: code, meaning: strings.TrimSpace(m[2])})
		from = sep[0]
	}
	return codes, rest, true
}

// exitStatus is what a page's EXIT STATUS says: the codes documented in own, then those of
// inherited that own does not name, in the order of the codes; and the text that is not a
// list. A code own names without a meaning ("Exit code 0, 3 when some failed") takes the
// inherited one's.
func exitStatus(own []string, inherited []exitCode) (codes []exitCode, prose []string) {
	named := map[int]bool{}
	for _, s := range own {
		list, rest, ok := exitCodes(s)
		if !ok {
			prose = append(prose, s)
			continue
		}
		for _, c := range list {
			if named[c.code] {
				continue
			}
			named[c.code] = true
			codes = append(codes, c)
		}
		if rest != "" {
			prose = append(prose, rest)
		}
	}
	for _, p := range inherited {
		i := slices.IndexFunc(codes, func(c exitCode) bool { return c.code == p.code })
		switch {
		case i < 0:
			codes = append(codes, p)
		case codes[i].meaning == "":
			codes[i].meaning = p.meaning
		}
	}
	slices.SortStableFunc(codes, func(a, b exitCode) int { return cmp.Compare(a.code, b.code) })
	return codes, prose
}
