package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestUsageHintsPointAtHelpThatExists: for every command, a bad flag and too many
// arguments give one line whose "see 'shardctl ... --help'" names a page that exists.
func TestUsageHintsPointAtHelpThatExists(t *testing.T) {
	see := regexp.MustCompile(`see '(shardctl[^']*) --help'`)
	var paths [][]string
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			p := append(append([]string{}, prefix...), c.Name)
			paths = append(paths, p)
			walk(p, c.Subcommands)
		}
	}
	walk(nil, newApp().Commands)
	if len(paths) < 40 {
		t.Fatalf("only %d commands found", len(paths))
	}
	node := []string{"--node", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWJj2DY3nGiJfExXY3qJsk2KXm2LqJpSFNCrzxzsteCcLB"}
	checked := 0
	for _, p := range paths {
		if p[0] == "data" && len(p) > 1 && p[1] != "remove" || p[0] == "remove-internal-data" {
			continue // run in sharddaemon (its own tests check them)
		}
		for _, args := range [][]string{append(append([]string{}, p...), "--no-such-flag"), append(append(append([]string{}, p...), "a", "b", "c", "d", "e", "f", "--"), node...)} {
			_, errOut, code := runShardctl(t, args...)
			m := see.FindStringSubmatch(errOut)
			if m == nil {
				continue // no hint (a command that takes any number of words, say)
			}
			checked++
			if code != exitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("shardctl %s: exit %d, %q", strings.Join(args, " "), code, errOut)
			}
			help := append(strings.Fields(m[1])[1:], "--help")
			if out, e, code := runShardctl(t, help...); code != 0 || !strings.Contains(out, "USAGE:") {
				t.Errorf("shardctl %s points at '%s --help', which fails: exit %d %q", strings.Join(args, " "), m[1], code, e)
			}
		}
	}
	if checked < len(paths) {
		t.Errorf("only %d hints checked for %d commands", checked, len(paths))
	}
}
