package cmdline

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// exitCodeWithoutMeaning matches an EXIT STATUS entry whose code has no text.
var exitCodeWithoutMeaning = regexp.MustCompile(`\n\.TP\n\d\n\.`)

// CheckManPages returns what is wrong with app's man pages: a visible command without its
// page (app-shard-move for 'app shard move'), a page for anything else, fewer than
// minCommands visible commands, an exit code listed without its meaning. The binaries'
// tests call it.
func CheckManPages(app *cli.App, minCommands int) []error {
	pages := map[string]string{}
	for _, p := range ManPages(app) {
		pages[p.Name] = p.Text
	}
	var errs []error
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
				errs = append(errs, fmt.Errorf("'%s' has no man page %s.1", strings.ReplaceAll(name, "-", " "), name))
			}
			walk(name, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
	if commands < minCommands || len(pages) != commands+1 {
		errs = append(errs, fmt.Errorf("%d pages for %d commands and the program", len(pages), commands))
	}
	for name, text := range pages {
		if exitCodeWithoutMeaning.MatchString(text) {
			errs = append(errs, fmt.Errorf("%s.1 lists an exit code without its meaning:\n%s", name, text))
		}
	}
	return errs
}
