package cmdline

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// suite are the programs whose pages refer to each other: what one's help names in
// quotes ('sharddaemon config') is a page of the other's.
var suite = []string{"shardctl", "sharddaemon"}

// manCommand is `man [DIR]`: the program's man pages, made from the same commands, flags
// and descriptions as its --help, so that they cannot say something else.
func manCommand(prog string) *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "write the man pages: " + prog + "(1) and one per command",
		ArgsUsage: "[DIR]",
		Description: strings.ReplaceAll(`Writes the manual pages of PROG (section 1) into DIR, which is made if missing: PROG.1,
and one page per command named as git names its pages (PROG-shard-move.1 for
'PROG shard move'), each with its synopsis, description, options, exit codes, examples
and related pages. They hold the same text as --help. Without DIR it prints PROG.1.
Example:
   sudo PROG man /usr/local/share/man/man1 && man PROG
   PROG man | man -l -
   PROG man /tmp/man && man -l /tmp/man/PROG-help.1`, "PROG", prog),
		Action: func(c *cli.Context) error {
			args, err := PositionalArgs(c)
			if err != nil {
				return err
			}
			if len(args) > 1 {
				return Usagef("man takes at most one DIR (got %d arguments; see '%s --help')", len(args), helpName(c))
			}
			pages := ManPages(c.App)
			if len(args) == 0 {
				_, err := fmt.Fprint(c.App.Writer, pages[0].Text)
				return err
			}
			if err := writePages(args[0], pages); err != nil {
				return Failf("%v", err)
			}
			fmt.Fprintf(c.App.Writer, "wrote %s to %s\n", Plural(len(pages), "man page", "man pages"), args[0])
			return nil
		},
	}
}

func writePages(dir string, pages []ManPage) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	for _, p := range pages {
		if err := os.WriteFile(filepath.Join(dir, p.File()), []byte(p.Text), 0o644); err != nil {
			return fmt.Errorf("man pages: %w", err)
		}
	}
	return nil
}

// ManPage is one manual page, in section 1.
type ManPage struct {
	Name string // "shardctl" for the program, "shardctl-shard-move" for a command
	Text string // roff, with the man(7) macros
}

// File is the page's file name: Name.1.
func (p ManPage) File() string { return p.Name + ".1" }

// ManPages returns the man pages of app: its own first, then one for every command that
// is not hidden, parents before their subcommands. They are made from what --help shows
// (names, usage, descriptions, flags as urfave/cli prints them), stamped with the version
// and a date that the same source always gives: $SOURCE_DATE_EPOCH's (reproducible-builds.org;
// scripts/release sets it to the commit's time), else the commit's when the build recorded
// one, else none.
func ManPages(app *cli.App) []ManPage {
	app.Setup()
	root := &manNode{name: app.Name, usage: app.Usage, usageText: app.UsageText, args: app.Args, argsUsage: app.ArgsUsage,
		desc: app.Description, flags: pageFlags(app.VisibleFlags()), commands: app.VisibleCommands(), help: parseHelp(app.Description)}
	b := build()
	if epoch, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		b.date = time.Unix(epoch, 0).UTC().Format(time.DateOnly)
	}
	var pages []ManPage
	var walk func(n *manNode, inherited []exitCode)
	walk = func(n *manNode, inherited []exitCode) {
		codes, prose := n.exitStatus(inherited)
		pages = append(pages, ManPage{Name: n.page(), Text: n.render(codes, prose, b)})
		for _, c := range n.commands {
			walk(n.child(c), codes)
		}
	}
	walk(root, nil)
	return pages
}

// manNode is the program or one of its commands, as its page describes it.
type manNode struct {
	parent    *manNode
	path      []string // the command's names from the program: ["shard", "move"]
	name      string
	usage     string
	usageText string
	args      bool
	argsUsage string
	desc      string
	flags     []cli.Flag // but --help
	commands  []*cli.Command
	help      helpText
}

func (n *manNode) child(c *cli.Command) *manNode {
	return &manNode{parent: n, path: append(slices.Clone(n.path), c.Name), name: c.Name, usage: c.Usage,
		usageText: c.UsageText, args: c.Args, argsUsage: c.ArgsUsage, desc: c.Description,
		flags: pageFlags(c.VisibleFlags()), commands: c.VisibleCommands(), help: parseHelp(c.Description)}
}

// pageFlags are the flags a page lists: all that --help shows but --help itself, which every
// command has (a command that has run has it, one that has not does not yet).
func pageFlags(flags []cli.Flag) []cli.Flag {
	return slices.DeleteFunc(slices.Clone(flags), func(f cli.Flag) bool { return slices.Contains(f.Names(), "help") })
}

func (n *manNode) root() *manNode {
	for n.parent != nil {
		n = n.parent
	}
	return n
}

// page is the node's page name: "shardctl-shard-move".
func (n *manNode) page() string { return n.names("-") }

// command is how the node's command is typed: "shardctl shard move".
func (n *manNode) command() string { return n.names(" ") }

func (n *manNode) names(sep string) string {
	return strings.Join(append([]string{n.root().name}, n.path...), sep)
}

// ref is the node's page as a reference in the text: shardctl-shard-move(1).
func ref(page string) string { return bold(page) + "(1)" }

// exitStatus is the node's exit codes: its own list when its description has one (a
// paragraph "Exit codes: …"), else its parent's, with what its prose says of single codes.
func (n *manNode) exitStatus(parent []exitCode) ([]exitCode, []string) {
	if len(n.help.exit) > 0 {
		parent = nil
	}
	return exitStatus(append(slices.Clone(n.help.exit), n.help.exitNote...), parent)
}

func (n *manNode) render(codes []exitCode, exitProse []string, b buildInfo) string {
	var r roff
	root := n.root()
	r.comment("Made by '" + root.name + " man' from " + root.name + "'s --help; edit the help, not this page.")
	r.macro("TH", strings.ToUpper(n.page()), "1", b.date, "shardmesh "+b.Version, "shardmesh manual")
	r.macro("nh")      // no hyphenation: flags and names are typed as printed
	r.macro("ad", "l") // ragged right, as --help
	r.macro("SH", "NAME")
	r.text(roffEscape(n.page()) + ` \- ` + roffEscape(n.usage))

	r.macro("SH", "SYNOPSIS")
	r.macro("nf")
	for _, line := range n.synopsis() {
		r.text(line)
	}
	r.macro("fi")

	r.macro("SH", "DESCRIPTION")
	body := n.help.body
	if len(body) == 0 {
		body = []block{{lines: []string{capitalize(strings.TrimSuffix(n.usage, ".")) + "."}}}
	}
	blocks(&r, body)

	if len(n.commands) > 0 {
		r.macro("SH", "COMMANDS")
		for _, c := range n.commands {
			r.macro("TP")
			r.text(ref(n.page() + "-" + c.Name))
			r.plain(c.Usage)
		}
	}

	if len(n.flags) > 0 {
		r.macro("SH", "OPTIONS")
		for _, f := range n.flags {
			names, usage, _ := strings.Cut(cli.FlagStringer(f), "\t")
			r.macro("TP")
			r.text(flagNames(names))
			r.plain(usage)
		}
	}

	if len(codes)+len(exitProse) > 0 {
		r.macro("SH", "EXIT STATUS")
		for _, c := range codes {
			r.macro("TP")
			r.plain(strconv.Itoa(c.code))
			r.plain(c.meaning)
		}
		for _, p := range exitProse {
			r.macro("PP")
			r.plain(p)
		}
	}

	if len(n.help.examples) > 0 {
		r.macro("SH", "EXAMPLES")
		blocks(&r, n.help.examples)
	}

	if see := n.seeAlso(); len(see) > 0 {
		r.macro("SH", "SEE ALSO")
		for i, p := range see {
			sep := ","
			if i == len(see)-1 {
				sep = ""
			}
			r.text(ref(p) + sep)
		}
	}
	return r.String()
}

// synopsis is the usage line of --help: the command's own usage text, or its name, whether
// it has options, and its arguments; a command that groups others says so, as the
// program's line does.
func (n *manNode) synopsis() []string {
	if n.usageText != "" {
		var lines []string
		for _, l := range strings.Split(n.usageText, "\n") {
			lines = append(lines, synopsisLine(strings.TrimSpace(l), n.command()))
		}
		return lines
	}
	line := bold(n.command())
	if n.parent == nil {
		if len(n.flags) > 0 {
			line += " [global options]"
		}
		if len(n.commands) > 0 {
			line += " command [command options]"
		}
	} else {
		if len(n.commands) > 0 {
			line += " [command]"
		}
		if len(n.flags) > 0 {
			line += " [command options]"
		}
	}
	switch {
	case n.argsUsage != "":
		line += " " + roffEscape(n.argsUsage)
	case n.args:
		line += " [arguments...]"
	}
	return []string{line}
}

// synopsisLine sets the command's name in bold at the start of a usage line.
func synopsisLine(line, command string) string {
	if rest, ok := strings.CutPrefix(line, command); ok {
		return bold(command) + roffEscape(rest)
	}
	return roffEscape(line)
}

// flagNames sets a flag's names as --help prints them ("--node MULTIADDR", "--yes, -y")
// with the names in bold and the value's placeholder in italics.
func flagNames(names string) string {
	words := strings.Fields(names)
	for i, w := range words {
		word, comma := strings.CutSuffix(w, ",")
		switch {
		case strings.HasPrefix(word, "-"):
			word = bold(word)
		case word == "[" || word == "]":
		default:
			word = italic(word)
		}
		if comma {
			word += ","
		}
		words[i] = word
	}
	return strings.Join(words, " ")
}

// blocks sets paragraphs filled and indented lines as written, indented.
func blocks(r *roff, bs []block) {
	for _, b := range bs {
		r.macro("PP")
		if !b.verbatim {
			for _, l := range b.lines {
				r.plain(l)
			}
			continue
		}
		r.macro("RS", "4")
		r.macro("nf")
		indent := -1
		for _, l := range b.lines {
			if n := len(l) - len(strings.TrimLeft(l, " \t")); indent < 0 || n < indent {
				indent = n
			}
		}
		for _, l := range b.lines {
			r.plain(strings.TrimRight(l[indent:], " "))
		}
		r.macro("fi")
		r.macro("RE")
	}
}

// quoted is a command quoted in a help text: 'shardctl keygen admin'.
var quoted = regexp.MustCompile(`'((?:` + strings.Join(suite, "|") + `)(?:\s+[^'\s]+)*)'`)

var commandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// seeAlso are the pages a page refers to: its parent's, the pages of the commands its
// description quotes (of this program, as far as they are its commands; of the other
// programs of the suite, as far as the words look like commands), and on a program's page
// the other programs'. Its subcommands are listed under COMMANDS.
func (n *manNode) seeAlso() []string {
	var see []string
	add := func(p string) {
		if p != n.page() && !slices.Contains(see, p) {
			see = append(see, p)
		}
	}
	if n.parent != nil {
		add(n.parent.page())
	}
	root := n.root()
	for _, m := range quoted.FindAllStringSubmatch(n.desc, -1) {
		words := strings.Fields(m[1])
		if words[0] == root.name {
			add(root.resolve(words[1:]).page())
			continue
		}
		page := words[0]
		for _, w := range words[1:] {
			if !commandWord.MatchString(w) {
				break
			}
			page += "-" + w
		}
		add(page)
	}
	if n.parent == nil {
		for _, p := range suite {
			if p != n.name {
				add(p)
			}
		}
	}
	return see
}

// resolve follows words down n's commands as far as they name one and returns that node.
func (n *manNode) resolve(words []string) *manNode {
	for _, w := range words {
		i := slices.IndexFunc(n.commands, func(c *cli.Command) bool { return c.HasName(w) })
		if i < 0 {
			break
		}
		n = n.child(n.commands[i])
	}
	return n
}
