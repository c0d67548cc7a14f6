package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestCLI runs the testscript scripts in testdata/cli against the built shardctl and
// sharddaemon: usage errors, suggestions, help, version, completion and man pages, as an
// operator types them. Each script runs in its own directory with its own HOME.
func TestCLI(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "cli"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exit": exitCmd, "manrefs": manRefsCmd},
	})
}

// exitCmd is "exit N PROG ARGS...": runs PROG and checks that it exits with code N; its
// output is there for stdout and stderr as after exec.
func exitCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exit CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exit: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// manPageRef is a reference to a man page in roff: \fBshardctl\-shard\-move\fR(1).
var manPageRef = regexp.MustCompile(`\\fB([a-z\\-]+)\\fR\(1\)`)

// manRefsCmd is "manrefs DIR": every page that a man page in DIR refers to (under COMMANDS
// and SEE ALSO) is in DIR too.
func manRefsCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: manrefs DIR")
	}
	pages, err := filepath.Glob(filepath.Join(ts.MkAbs(args[0]), "*.1"))
	if err != nil || len(pages) == 0 {
		ts.Fatalf("no man pages in %s (%v)", args[0], err)
	}
	refs := 0
	var missing []string
	for _, p := range pages {
		for _, m := range manPageRef.FindAllStringSubmatch(ts.ReadFile(p), -1) {
			refs++
			name := strings.ReplaceAll(m[1], `\-`, "-") + ".1"
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), name)); err != nil {
				missing = append(missing, filepath.Base(p)+" refers to "+name)
			}
		}
	}
	if len(missing) > 0 {
		ts.Fatalf("pages that are not there:\n%s", strings.Join(missing, "\n"))
	}
	ts.Logf("%d pages, %d references, all there", len(pages), refs)
}
