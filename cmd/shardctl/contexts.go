package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/internal/suggest"
)

// A context is a saved set of the flags that name a cluster and who calls it (kubectl's
// contexts): --node or --data-dir, --cluster-key, --identity, --credential, --timeout. The
// current one (or --context NAME, $SHARDMESH_CONTEXT) fills in each of them that the command
// line and the environment leave unset.

// contextFlags are the global flags a context may hold, in the order they are shown.
var contextFlags = []string{"node", "data-dir", "cluster-key", "identity", "credential", "timeout"}

// contextFile is what the contexts file holds.
type contextFile struct {
	Current  string                       `yaml:"current,omitempty"`
	Contexts map[string]map[string]string `yaml:"contexts,omitempty"` // name → flag → value
}

// contextsPath is the contexts file: $SHARDMESH_CONTEXTS, or shardmesh/shardctl.yaml in
// the user's configuration directory ($XDG_CONFIG_HOME, else ~/.config).
func contextsPath() (string, error) {
	if p := os.Getenv("SHARDMESH_CONTEXTS"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the contexts file (set $SHARDMESH_CONTEXTS): %w", err)
	}
	return filepath.Join(dir, "shardmesh", "shardctl.yaml"), nil
}

// loadContexts reads the contexts file; a missing file holds no context.
func loadContexts() (*contextFile, string, error) {
	path, err := contextsPath()
	if err != nil {
		return nil, "", err
	}
	f := &contextFile{Contexts: map[string]map[string]string{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("contexts file: %w", err)
	}
	if err := yaml.Unmarshal(data, f); err != nil {
		return nil, path, fmt.Errorf("contexts file %s: %w (fix or remove it)", path, err)
	}
	if f.Contexts == nil {
		f.Contexts = map[string]map[string]string{}
	}
	return f, path, nil
}

// save writes the contexts file (mode 0600: it names key files) atomically.
func (f *contextFile) save(path string) error {
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("contexts file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".shardctl-*.yaml")
	if err != nil {
		return fmt.Errorf("contexts file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("contexts file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("contexts file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("contexts file: %w", err)
	}
	return nil
}

// names returns the contexts' names, sorted.
func (f *contextFile) names() []string {
	names := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lookup returns context name, or a bad-usage error naming the closest one.
func (f *contextFile) lookup(name string) (map[string]string, error) {
	if ctx, ok := f.Contexts[name]; ok {
		return ctx, nil
	}
	hint := suggest.DidYouMean(name, f.names())
	if hint == "" {
		hint = "; shardctl context list shows them"
	}
	if len(f.Contexts) == 0 {
		hint = "; there is none yet: shardctl context set NAME --node ..."
	}
	return nil, cmdline.Usagef("unknown context %q%s", cmdline.Truncate(name, 80), hint)
}

// applyContext fills in the global flags the command line and the environment leave unset
// from the context --context (or $SHARDMESH_CONTEXT) names, or else the current one.
func applyContext(c *cli.Context) error {
	f, _, err := loadContexts()
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	name := c.String("context")
	if name == "" {
		name = f.Current
	}
	if name == "" {
		return nil
	}
	ctx, err := f.lookup(name)
	if err != nil {
		return err
	}
	// Given: on the command line or in the environment, and not empty (SHARDMESH_NODE=
	// unsets). --node and --data-dir both name the member to ask: one given replaces the
	// context's way of naming it.
	given := func(flag string) bool { return c.IsSet(flag) && fmt.Sprint(c.Value(flag)) != "" }
	entryGiven := given("node") || given("data-dir")
	for _, flag := range contextFlags {
		v, ok := ctx[flag]
		if !ok || given(flag) || entryGiven && (flag == "node" || flag == "data-dir") {
			continue
		}
		if err := c.Set(flag, v); err != nil {
			return cmdline.Usagef("context %q: %s = %q: %v", name, flag, v, err)
		}
	}
	return nil
}

func contextCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "node", Usage: "the member to talk to (`MULTIADDR`)"},
		&cli.StringFlag{Name: "data-dir", Usage: "data `DIR` of a member on this machine"},
		&cli.StringFlag{Name: "cluster-key", Usage: "the cluster's key `FILE`"},
		&cli.StringFlag{Name: "identity", Usage: "admin identity key `FILE`"},
		&cli.StringFlag{Name: "credential", Usage: "the identity's admin credential `FILE` (default: IDENTITY.credential when it exists)"},
		&cli.DurationFlag{Name: "timeout", Usage: "the default --timeout"},
	}
	return &cli.Command{
		Name:  "context",
		Usage: "save the flags that reach a cluster under a name, and use them (kubectl-style)",
		Description: `A context saves --node (or --data-dir), --cluster-key, --identity, --credential and
--timeout under a name, so they need not go on every call. The current context fills in whatever the command
line and the environment ($SHARDMESH_NODE, ...) leave unset; --context NAME (or
$SHARDMESH_CONTEXT) uses another for one call. Contexts live in
$XDG_CONFIG_HOME/shardmesh/shardctl.yaml (~/.config/shardmesh/shardctl.yaml), or the file
$SHARDMESH_CONTEXTS names; file names in it are made absolute when saved.
Example:
   shardctl context set prod --node /ip4/10.0.0.1/tcp/4001/p2p/12D3KooW... \
       --cluster-key /etc/shardmesh/cluster.key --identity ~/admin.key
   shardctl context use prod
   shardctl members                       # asks prod's member
   shardctl members --context staging     # one call elsewhere`,
		Subcommands: []*cli.Command{
			{
				Name:      "set",
				Usage:     "create or update a context (and make it current if there is none)",
				ArgsUsage: "NAME",
				Flags:     flags,
				Description: `Sets the flags given on context NAME, keeping the others it has.
Example:
   shardctl context set local --data-dir /tmp/a --cluster-key cluster.key --identity admin.key`,
				Action: func(c *cli.Context) error {
					args, err := cmdline.Positional(c, "NAME", 1)
					if err != nil {
						return err
					}
					name := args[0]
					if name == "" || strings.ContainsAny(name, " \t\n/") {
						return cmdline.Usagef("context name %q: use letters, digits, - and _", name)
					}
					f, path, err := loadContexts()
					if err != nil {
						return cli.Exit(err.Error(), exitFailed)
					}
					ctx := f.Contexts[name]
					if ctx == nil {
						ctx = map[string]string{}
					}
					given := 0
					for _, flag := range contextFlags {
						if !c.IsSet(flag) {
							continue
						}
						v := c.String(flag)
						if flag == "timeout" {
							if d := c.Duration(flag); d <= 0 {
								return cmdline.Usagef("--timeout %v: must be positive", d)
							}
							v = c.Duration(flag).String()
						}
						if flag == "data-dir" || flag == "cluster-key" || flag == "identity" || flag == "credential" {
							if v, err = filepath.Abs(v); err != nil {
								return cmdline.Usagef("--%s: %v", flag, err)
							}
						}
						ctx[flag] = v
						given++
					}
					if c.IsSet("node") {
						delete(ctx, "data-dir") // one way to name the member
					} else if c.IsSet("data-dir") {
						delete(ctx, "node")
					}
					if given == 0 {
						return cmdline.Usagef("context set %s: give at least one of --node, --data-dir, --cluster-key, --identity, --credential, --timeout", name)
					}
					f.Contexts[name] = ctx
					if f.Current == "" {
						f.Current = name
					}
					if err := f.save(path); err != nil {
						return cli.Exit(err.Error(), exitFailed)
					}
					return showContext(c, f, name)
				},
			},
			{
				Name:      "use",
				Usage:     "make a context the current one",
				ArgsUsage: "NAME",
				Description: `Example:
   shardctl context use prod`,
				Action: func(c *cli.Context) error {
					args, err := cmdline.Positional(c, "NAME", 1)
					if err != nil {
						return err
					}
					f, path, err := loadContexts()
					if err != nil {
						return cli.Exit(err.Error(), exitFailed)
					}
					if _, err := f.lookup(args[0]); err != nil {
						return err
					}
					f.Current = args[0]
					if err := f.save(path); err != nil {
						return cli.Exit(err.Error(), exitFailed)
					}
					if !c.Bool("json") {
						fmt.Fprintf(c.App.Writer, "now using context %s\n", args[0])
						return nil
					}
					return showContext(c, f, args[0])
				},
			},
			{
				Name:  "list",
				Usage: "list the contexts; * marks the current one",
				Description: `Example:
   shardctl context list --json`,
				Action: func(c *cli.Context) error {
					if _, err := cmdline.Positional(c, "", 0); err != nil {
						return err
					}
					f, _, err := loadContexts()
					if err != nil {
						return cli.Exit(err.Error(), exitFailed)
					}
					if c.Bool("json") {
						return cmdline.PrintJSON(c.App.Writer, contextsView(f))
					}
					t := cmdline.NewTable(c.App.Writer, "CURRENT", "NAME", "MEMBER", "CLUSTER KEY", "IDENTITY")
					for _, n := range f.names() {
						ctx := f.Contexts[n]
						cur := ""
						if n == f.Current {
							cur = "*"
						}
						member := ctx["node"]
						if member == "" && ctx["data-dir"] != "" {
							member = "--data-dir " + ctx["data-dir"]
						}
						t.Row(cur, n, cmdline.OrDash(member), cmdline.OrDash(ctx["cluster-key"]), cmdline.OrDash(ctx["identity"]))
					}
					t.Flush()
					if len(f.Contexts) == 0 {
						fmt.Fprintln(c.App.Writer, "no context yet: shardctl context set NAME --node ... (see --help)")
					}
					return nil
				},
			},
			{
				Name:      "show",
				Usage:     "show a context (the current one by default)",
				ArgsUsage: "[NAME]",
				Description: `Example:
   shardctl context show
   shardctl context show prod --json`,
				Action: func(c *cli.Context) error {
					args, err := cmdline.PositionalArgs(c)
					if err != nil {
						return err
					}
					if len(args) > 1 {
						return cmdline.Usagef("context show takes at most one NAME (got %d arguments)", len(args))
					}
					f, _, err := loadContexts()
					if err != nil {
						return cli.Exit(err.Error(), exitFailed)
					}
					name := f.Current
					if len(args) == 1 {
						name = args[0]
					}
					if name == "" {
						return cli.Exit("no current context: shardctl context use NAME (or context set NAME ...)", exitFailed)
					}
					if _, err := f.lookup(name); err != nil {
						return err
					}
					return showContext(c, f, name)
				},
			},
			{
				Name:      "delete",
				Usage:     "delete a context",
				ArgsUsage: "NAME",
				Description: `Deletes context NAME; if it was the current one, no context is current afterwards.
Example:
   shardctl context delete staging`,
				Action: func(c *cli.Context) error {
					args, err := cmdline.Positional(c, "NAME", 1)
					if err != nil {
						return err
					}
					f, path, err := loadContexts()
					if err != nil {
						return cli.Exit(err.Error(), exitFailed)
					}
					if _, err := f.lookup(args[0]); err != nil {
						return err
					}
					delete(f.Contexts, args[0])
					if f.Current == args[0] {
						f.Current = ""
					}
					if err := f.save(path); err != nil {
						return cli.Exit(err.Error(), exitFailed)
					}
					if !c.Bool("json") {
						fmt.Fprintf(c.App.Writer, "deleted context %s\n", args[0])
						return nil
					}
					return cmdline.PrintJSON(c.App.Writer, contextsView(f))
				},
			},
		},
	}
}

// contextJSON is one context in --json.
type contextJSON struct {
	Name    string            `json:"name"`
	Current bool              `json:"current"`
	Flags   map[string]string `json:"flags"`
}

func contextsView(f *contextFile) []contextJSON {
	out := []contextJSON{}
	for _, n := range f.names() {
		out = append(out, contextJSON{Name: n, Current: n == f.Current, Flags: f.Contexts[n]})
	}
	return out
}

// showContext prints context name's flags.
func showContext(c *cli.Context, f *contextFile, name string) error {
	ctx := f.Contexts[name]
	if c.Bool("json") {
		return cmdline.PrintJSON(c.App.Writer, contextJSON{Name: name, Current: name == f.Current, Flags: ctx})
	}
	cur := ""
	if name == f.Current {
		cur = " (current)"
	}
	fmt.Fprintf(c.App.Writer, "context %s%s\n", name, cur)
	for _, flag := range contextFlags {
		if v, ok := ctx[flag]; ok {
			fmt.Fprintf(c.App.Writer, "  --%-12s %s\n", flag, v)
		}
	}
	return nil
}
