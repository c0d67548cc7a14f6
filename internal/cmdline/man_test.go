package cmdline

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// testApp is a program with what help texts hold that roff would take otherwise: lines that
// start with a dot or a single quote, backslashes, dashes, text outside ASCII; a group, a
// hidden command, examples, and exit codes as a paragraph and in the prose.
func testApp() *cli.App {
	app := &cli.App{
		Name:  "shardctl",
		Usage: "operate a test cluster",
		Description: `Talks to one member.
.shardmesh is not a request, and neither is
'shardctl stats' at the start of a line. A backslash \fB is no font change, and \e no escape.
Names go … here, and tabs	too.

Exit codes: 0 ok, 1 failed, 2 bad usage, 3 partial result, 4 refused.`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "node", Usage: "the `MULTIADDR` to talk to", EnvVars: []string{"SHARDMESH_NODE"}}},
		Commands: []*cli.Command{
			{
				Name:      "stats",
				Usage:     "shards and entities",
				ArgsUsage: "[TYPE]",
				Description: `Prints the stats. Exit code 0 when all answered, 3 when some did not. More text.
Example, with a continued line:
   shardctl stats --node /ip4/1.2.3.4/tcp/1 \
       --json

   shardctl stats counter
Once more prose, and 'shardctl shard move' and 'sharddaemon config check FILE'.`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
					&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask"},
				},
				Action: func(*cli.Context) error { return nil },
			},
			{
				Name:  "shard",
				Usage: "move shards",
				Subcommands: []*cli.Command{
					{Name: "move", Usage: "move a shard", ArgsUsage: "TYPE SHARD NODE", Description: "Moves it.\nExit codes: 0 moved, 1 not moved.",
						Action: func(*cli.Context) error { return nil }},
					{Name: "secret", Usage: "hidden", Hidden: true, Action: func(*cli.Context) error { return nil }},
				},
			},
			{Name: "internal", Usage: "hidden", Hidden: true, Action: func(*cli.Context) error { return nil }},
		},
	}
	Conventions(app)
	return app
}

func pagesByName(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{}
	for _, p := range ManPages(testApp()) {
		pages[p.Name] = p.Text
	}
	return pages
}

func TestManPagesOnePerVisibleCommand(t *testing.T) {
	pages := ManPages(testApp())
	var names []string
	for _, p := range pages {
		names = append(names, p.Name)
		if p.File() != p.Name+".1" {
			t.Errorf("%s: file %s", p.Name, p.File())
		}
	}
	want := []string{"shardctl", "shardctl-stats", "shardctl-shard", "shardctl-shard-move",
		"shardctl-help", "shardctl-version", "shardctl-completion", "shardctl-man"}
	if !slices.Equal(names, want) {
		t.Errorf("pages %v, want %v (the program first, parents before their commands, no hidden command)", names, want)
	}
	for _, p := range pages {
		for _, section := range []string{".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", `.SH "EXIT STATUS"`, `.SH "SEE ALSO"`} {
			if !strings.Contains(p.Text, "\n"+section+"\n") {
				t.Errorf("%s has no %s section", p.Name, section)
			}
		}
		if !strings.Contains(p.Text, "\n.TH "+roffEscape(strings.ToUpper(p.Name))+" 1 ") {
			t.Errorf("%s: no title line for section 1:\n%s", p.Name, p.Text)
		}
	}
}

// TestManPageDate: $SOURCE_DATE_EPOCH dates the pages, so that a release build gives the
// same pages on every run.
func TestManPageDate(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if p := ManPages(testApp())[0]; !strings.Contains(p.Text, "\n.TH SHARDCTL 1 2023\\-11\\-14 ") {
		t.Errorf("no date from SOURCE_DATE_EPOCH:\n%.200s", p.Text)
	}
}

func TestRoffEscape(t *testing.T) {
	for in, want := range map[string]string{
		"--data-dir":          `\-\-data\-dir`,
		`a \ b`:               `a \e b`,
		`\fB`:                 `\efB`,
		"…Xy3k":               `\[u2026]Xy3k`,
		"2⁶³":                 `2\[u2076]\[u00B3]`,
		"st␀TYPE":             `st\e0TYPE`,
		"a\tb":                "a b",
		"bell\a":              "bell",
		`"quoted" and 'this'`: `"quoted" and 'this'`,
	} {
		if got := roffEscape(in); got != want {
			t.Errorf("roffEscape(%q) = %q, want %q", in, got, want)
		}
	}
	var r roff
	r.plain(".starts with a dot")
	r.plain("'starts with a quote")
	r.plain("in .the middle 'is fine'")
	r.macro("SH", "EXIT STATUS")
	r.macro("TH", "X", "1", "", `say "hi"`)
	want := `\&.starts with a dot
\&'starts with a quote
in .the middle 'is fine'
.SH "EXIT STATUS"
.TH X 1 "" "say \(dqhi\(dq"
`
	if r.String() != want {
		t.Errorf("roff:\n%s\nwant\n%s", r.String(), want)
	}
}

// TestManPageText: what the help says is on the page, in its section, escaped; every line
// that starts with a control character is a request of ours.
func TestManPageText(t *testing.T) {
	pages := pagesByName(t)
	top, stats, move := pages["shardctl"], pages["shardctl-stats"], pages["shardctl-shard-move"]
	for _, want := range []string{
		"shardctl \\- operate a test cluster\n",
		"\\&.shardmesh is not a request",
		"\\&'shardctl stats' at the start",
		`A backslash \efB is no font change, and \ee no escape.`,
		`Names go \[u2026] here, and tabs too.`,
		".TP\n\\fB\\-\\-node\\fR \\fIMULTIADDR\\fR\nthe MULTIADDR to talk to [$SHARDMESH_NODE]\n",
		".TP\n\\fBshardctl\\-stats\\fR(1)\nshards and entities\n",
		".TP\n0\nok\n.TP\n1\nfailed\n",
		"\\fBsharddaemon\\fR(1)", // the other program of the suite
	} {
		if !strings.Contains(top, want) {
			t.Errorf("shardctl.1 has no %q:\n%s", want, top)
		}
	}
	if strings.Contains(section(top, "DESCRIPTION"), "Exit codes") {
		t.Errorf("the paragraph of exit codes stayed in DESCRIPTION:\n%s", top)
	}
	for _, want := range []string{
		".SH SYNOPSIS\n.nf\n\\fBshardctl stats\\fR [command options] [TYPE]\n.fi\n",
		// The exit codes its prose names, and the program's others.
		".TP\n0\nwhen all answered\n.TP\n1\nfailed\n.TP\n2\nbad usage\n.TP\n3\nwhen some did not\n.TP\n4\nrefused\n",
		"\\fB\\-\\-yes\\fR, \\fB\\-y\\fR\ndo not ask (default: false)\n",
		// Examples: the intro, then the commands as typed, the blank line between kept apart.
		".SH EXAMPLES\n.PP\nWith a continued line:\n.PP\n.RS 4\n.nf\nshardctl stats \\-\\-node /ip4/1.2.3.4/tcp/1 \\e\n    \\-\\-json\n.fi\n.RE\n.PP\n.RS 4\n.nf\nshardctl stats counter\n.fi\n.RE\n",
		// The prose after the examples is description again.
		"Once more prose",
		// See also: the parent, the quoted commands (this program's as far as they exist).
		".SH \"SEE ALSO\"\n\\fBshardctl\\fR(1),\n\\fBshardctl\\-shard\\-move\\fR(1),\n\\fBsharddaemon\\-config\\-check\\fR(1)\n",
	} {
		if !strings.Contains(stats, want) {
			t.Errorf("shardctl-stats.1 has no %q:\n%s", want, stats)
		}
	}
	if strings.Contains(section(stats, "EXAMPLES"), "Once more") {
		t.Errorf("prose after the examples went into EXAMPLES:\n%s", stats)
	}
	// A paragraph of exit codes is the command's whole list: the program's others are not added.
	if got := section(move, "EXIT STATUS"); got != ".TP\n0\nmoved\n.TP\n1\nnot moved\n" {
		t.Errorf("shardctl-shard-move.1 EXIT STATUS:\n%s", got)
	}
	if !strings.Contains(pages["shardctl-shard"], ".SH COMMANDS\n.TP\n\\fBshardctl\\-shard\\-move\\fR(1)\nmove a shard\n.SH") {
		t.Errorf("shardctl-shard.1 does not list its visible command only:\n%s", pages["shardctl-shard"])
	}
	requests := regexp.MustCompile(`^\.(\\"|TH|SH|PP|TP|RS|RE|nf|fi|nh|ad)( |$)`)
	for name, text := range pages {
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if (strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'")) && !requests.MatchString(line) {
				t.Errorf("%s: a line starts with a control character: %q", name, line)
			}
			if line == "" {
				t.Errorf("%s: a blank line (roff prints it as space)", name)
			}
		}
	}
}

// section is the text of a page's section, between its .SH line and the next.
func section(page, name string) string {
	head := ".SH " + name + "\n"
	if strings.Contains(name, " ") {
		head = `.SH "` + name + `"` + "\n"
	}
	_, rest, ok := strings.Cut(page, head)
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n.SH ")
	return strings.TrimSuffix(body, "\n") + "\n"
}

func TestExitCodes(t *testing.T) {
	codes, rest, ok := exitCodes("Exit codes: 0 left gracefully; 1 failed, at start (a store, a disk); 3 downed. A supervisor restarts it on 1 and 3.")
	want := []exitCode{{0, "left gracefully"}, {1, "failed, at start (a store, a disk)"}, {3, "downed"}}
	if !ok || !slices.Equal(codes, want) || rest != "A supervisor restarts it on 1 and 3." {
		t.Errorf("got %v %q %v", codes, rest, ok)
	}
	if _, _, ok := exitCodes("Exit codes are those of sharddaemon."); ok {
		t.Error("prose read as a list")
	}
	codes, prose := exitStatus([]string{"Exit code 0, 3 when some failed, 1 when all failed.", "Exit codes are sharddaemon's."},
		[]exitCode{{0, "ok"}, {1, "failed"}, {2, "bad usage"}})
	want = []exitCode{{0, "ok"}, {1, "when all failed"}, {2, "bad usage"}, {3, "when some failed"}}
	if !slices.Equal(codes, want) || !slices.Equal(prose, []string{"Exit codes are sharddaemon's."}) {
		t.Errorf("got %v %q", codes, prose)
	}
}

// TestManPagesAreValidRoff: groff reads every page without a warning (-ww: all of them).
func TestManPagesAreValidRoff(t *testing.T) {
	for _, p := range ManPages(testApp()) {
		checkRoff(t, p.Name, p.Text)
	}
}

// checkRoff runs groff -man -ww -z on a page and fails on any output: a warning is a page
// that does not print as written.
func checkRoff(t *testing.T, name, text string) {
	t.Helper()
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed (apt-get install groff-base), so roff validity is not checked here")
	}
	cmd := exec.Command(groff, "-man", "-ww", "-z")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || out.Len() > 0 {
		t.Errorf("groff -man -ww -z %s: %v\n%s", filepath.Base(name)+".1", err, out.String())
	}
}

// TestCheckManPagesFails: the binaries' coverage check is one that can fail.
func TestCheckManPagesFails(t *testing.T) {
	app := &cli.App{Name: "prog", Commands: []*cli.Command{{Name: "run", Usage: "runs"}}}
	if errs := CheckManPages(app, 1); len(errs) != 0 {
		t.Fatalf("a covered app: %v", errs)
	}
	if errs := CheckManPages(app, 100); len(errs) != 1 {
		t.Fatalf("fewer commands than asked for: %v", errs)
	}
}
