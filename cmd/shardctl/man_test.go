package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// TestManPageForEveryCommand: every command that --help lists has its man page
// (shardctl-shard-move for 'shardctl shard move'), and nothing else has one; every exit
// code a page lists says what it means.
func TestManPageForEveryCommand(t *testing.T) {
	pages := map[string]string{}
	for _, p := range cmdline.ManPages(newApp()) {
		pages[p.Name] = p.Text
	}
	commands := 0
	var walk func(page string, cmds []*cli.Command)
	walk = func(page string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			commands++
			name := page + "-" + c.Name
			if _, ok := pages[name]; !ok {
				t.Errorf("'%s' has no man page %s.1", strings.ReplaceAll(name, "-", " "), name)
			}
			walk(name, c.Subcommands)
		}
	}
	walk("shardctl", newApp().Commands)
	if commands < 40 || len(pages) != commands+1 {
		t.Errorf("%d pages for %d commands and the program", len(pages), commands)
	}
	noMeaning := regexp.MustCompile(`\n\.TP\n\d\n\.`)
	for name, text := range pages {
		if noMeaning.MatchString(text) {
			t.Errorf("%s.1 lists an exit code without its meaning:\n%s", name, text)
		}
	}
}
