package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/passivation/simulator"
)

// simCommand groups the offline simulators.
func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "run offline simulations: passivation policies on a trace, a cluster at your scale",
		Subcommands: []*cli.Command{
			simPassivationCommand(),
			daemonCommand("cluster", "simulate N members with your configuration: convergence, failure detection, failover, traffic per member", "sim", "cluster"),
		},
	}
}

// The defaults of Akka's passivation simulator (run-defaults, strategy-defaults).
const (
	simDefaultShards  = 100
	simDefaultRegions = 10
	simDefaultLimit   = 100_000
)

// strategyShortcuts are the strategies the simulator knows by a short name; their limit is
// --limit, or 100,000 per region.
var strategyShortcuts = []struct {
	name     string
	settings func() passivation.Settings
}{
	{"lru", func() passivation.Settings { return passivation.Limited(simDefaultLimit, passivation.LRU()) }},
	{"slru", func() passivation.Settings {
		return passivation.Limited(simDefaultLimit, passivation.SegmentedLRU(0.2, 0.8))
	}},
	{"s4lru", func() passivation.Settings {
		return passivation.Limited(simDefaultLimit, passivation.EvenlySegmentedLRU(4))
	}},
	{"mru", func() passivation.Settings { return passivation.Limited(simDefaultLimit, passivation.MRU()) }},
	{"lfu", func() passivation.Settings { return passivation.Limited(simDefaultLimit, passivation.LFU(false)) }},
	{"lfuda", func() passivation.Settings { return passivation.Limited(simDefaultLimit, passivation.LFU(true)) }},
	{"w-tinylfu", passivation.DefaultStrategy},
	{"w-tinylfu-static", func() passivation.Settings {
		s := passivation.DefaultStrategy()
		s.Admission.Window.Optimizer = passivation.NoOptimizer
		return s
	}},
	{"idle", passivation.DefaultSettings},
}

func shortcutNames() string {
	names := make([]string, len(strategyShortcuts))
	for i, s := range strategyShortcuts {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

func simPassivationCommand() *cli.Command {
	return &cli.Command{
		Name:      "passivation",
		Usage:     "replay an access trace through the passivation strategies and print their active (hit) rates",
		UsageText: "shardctl sim passivation --trace FILE [--format lirs|arc|simple] [--strategy NAME]... [--limit N]... [--regions R] [--shards S] [--config FILE]",
		Description: `Replays the entity ids of a trace through the real passivation code, as Akka's passivation
simulator does: each id maps to a shard with Akka's default extractor, each shard is
allocated on its first access to the region with the fewest shards, and each region's
active-entity limit is divided evenly among its active shards. The active rate is the
share of accesses that found their entity already active.

A strategy is one of the shortcuts
   ` + shortcutNames() + `,
default-strategy or default-idle-strategy, or the name of a strategy block in --config (a
YAML file with a top-level "passivation" block, keys as in reference.conf). --strategy and
--limit may be repeated: every combination runs. --limit is per region.

Example, Akka's "glimpse" runs with LRU and Window-TinyLFU:

   shardctl sim passivation --trace gli.trace.gz --format lirs \
       --strategy lru --strategy default-strategy --limit 500 --limit 1000 --regions 1 --shards 10

Exit codes: 0 done, 2 bad input (flags, config, trace).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "trace", Usage: "trace `FILE`, plain or gzip-compressed"},
			&cli.StringFlag{Name: "format", Value: "lirs", Usage: "trace `FORMAT`: lirs, arc or simple"},
			&cli.StringSliceFlag{Name: "strategy", Usage: "strategy `NAME` (repeatable; default: the one --config selects, else default-strategy)"},
			&cli.IntSliceFlag{Name: "limit", Usage: "active-entity limit `N` per region (repeatable; default: the strategy's own, 100,000 for shortcuts)"},
			&cli.IntFlag{Name: "regions", Value: simDefaultRegions, Usage: "number `R` of shard regions"},
			&cli.IntFlag{Name: "shards", Value: simDefaultShards, Usage: "number `S` of shards"},
			&cli.StringFlag{Name: "config", Usage: "YAML `FILE` with a passivation block defining strategies"},
			&cli.DurationFlag{Name: "tick", Value: time.Millisecond, Usage: "virtual `DURATION` between accesses, for idle timeouts"},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON"},
		},
		Action: runSimPassivation,
	}
}

// simRun is one strategy and limit to simulate.
type simRun struct {
	name     string
	settings passivation.Settings
}

// simResult is one line of the output.
type simResult struct {
	Strategy     string  `json:"strategy"`
	Limit        int     `json:"limit"`
	ActiveRate   float64 `json:"active_rate_percent"`
	Accesses     int64   `json:"accesses"`
	Activations  int64   `json:"activations"`
	Passivations int64   `json:"passivations"`
	Description  string  `json:"description"`
}

func runSimPassivation(c *cli.Context) error {
	if _, err := cmdline.Positional(c, "", 0); err != nil {
		return err
	}
	path := c.String("trace")
	if path == "" {
		return cmdline.Usagef("--trace FILE is required")
	}
	format, err := simulator.ParseFormat(c.String("format"))
	if err != nil {
		return cmdline.Usagef("--format: %v", err)
	}
	regions, shards := c.Int("regions"), c.Int("shards")
	if regions < 1 {
		return cmdline.Usagef("--regions %d: must be at least 1", regions)
	}
	if shards < 1 || shards > 1<<20 {
		return cmdline.Usagef("--shards %d: must be between 1 and %d", shards, 1<<20)
	}
	if tick := c.Duration("tick"); tick <= 0 {
		return cmdline.Usagef("--tick %s: must be positive", tick)
	}
	var tree map[string]any
	if file := c.String("config"); file != "" {
		if tree, err = loadPassivationBlock(file); err != nil {
			return cmdline.Usagef("--config %s: %v", file, err)
		}
	}
	runs, err := simRuns(c.StringSlice("strategy"), c.IntSlice("limit"), tree)
	if err != nil {
		return cmdline.Usagef("%v", err)
	}

	f, err := os.Open(path)
	if err != nil {
		return cmdline.Usagef("--trace: %v", err)
	}
	trace, err := simulator.LoadTrace(f, format)
	_ = f.Close()
	if err != nil {
		return cmdline.Usagef("--trace %s (%s): %v", path, format, err)
	}
	if len(trace.Accesses) == 0 {
		return cmdline.Usagef("--trace %s (%s): no accesses", path, format)
	}

	results := make([]simResult, 0, len(runs))
	for _, run := range runs {
		stats, err := simulator.RunTrace(simulator.Config{Settings: run.settings, Regions: regions, Shards: shards, Tick: c.Duration("tick")}, trace)
		if err != nil {
			return cmdline.Usagef("strategy %s: %v", run.name, err)
		}
		results = append(results, simResult{
			Strategy: run.name, Limit: run.settings.ActiveEntityLimit, ActiveRate: stats.ActiveRate(),
			Accesses: stats.Accesses, Activations: stats.Activations, Passivations: stats.Passivations,
			Description: run.settings.String(),
		})
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	return printSimResults(c.App.Writer, path, format, len(trace.Accesses), regions, shards, results)
}

// simRuns resolves every strategy name and applies every limit.
func simRuns(strategies []string, limits []int, tree map[string]any) ([]simRun, error) {
	if len(strategies) == 0 {
		if tree == nil {
			strategies = []string{passivation.DefaultStrategyName}
		} else { // the strategy the configuration selects
			s, err := passivation.Parse(tree)
			if err != nil {
				return nil, err
			}
			strategies = []string{s.Strategy}
		}
	}
	for _, l := range limits {
		if l < 1 {
			return nil, fmt.Errorf("--limit %d: must be a positive number of entities per region", l)
		}
	}
	var runs []simRun
	for _, name := range strategies {
		s, err := resolveStrategy(name, tree)
		if err != nil {
			return nil, err
		}
		if len(limits) == 0 {
			runs = append(runs, simRun{name, s})
			continue
		}
		if s.Replacement.Policy == passivation.NoPolicy {
			return nil, fmt.Errorf("--strategy %s has no replacement policy, so --limit has no effect on it (%s)", name, s)
		}
		for _, l := range limits {
			runs = append(runs, simRun{name, s.WithActiveEntityLimit(l)})
		}
	}
	return runs, nil
}

// resolveStrategy finds a strategy: a block of the config file, a shortcut, or a block of
// reference.conf.
func resolveStrategy(name string, tree map[string]any) (passivation.Settings, error) {
	if tree != nil {
		if _, ok := tree[name]; ok {
			return passivation.ParseStrategy(tree, name)
		}
	}
	for _, s := range strategyShortcuts {
		if strings.EqualFold(s.name, name) {
			return s.settings(), nil
		}
	}
	s, err := passivation.ParseStrategy(tree, name)
	var ce *passivation.ConfigError
	if errors.As(err, &ce) && ce.Key == "passivation.strategy" {
		return s, fmt.Errorf("--strategy %q: not a shortcut (%s) nor a strategy block (%s)", name, shortcutNames(), knownBlocks(tree))
	}
	return s, err
}

func knownBlocks(tree map[string]any) string {
	names := []string{passivation.DefaultIdleStrategyName, passivation.DefaultStrategyName}
	for k, v := range tree {
		if _, ok := v.(map[string]any); ok && k != "strategy-defaults" && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// loadPassivationBlock reads a YAML file and returns its top-level passivation block.
func loadPassivationBlock(file string) (map[string]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	block, ok := doc["passivation"]
	if !ok {
		return nil, errors.New(`no top-level "passivation" block`)
	}
	m, ok := block.(map[string]any)
	if !ok {
		return nil, errors.New(`"passivation" must be a block (a map)`)
	}
	if _, err := passivation.Parse(m); err != nil {
		return nil, err
	}
	return m, nil
}

func printSimResults(w io.Writer, path string, format simulator.Format, accesses, regions, shards int, results []simResult) error {
	plural := "s"
	if regions == 1 {
		plural = ""
	}
	if _, err := fmt.Fprintf(w, "trace %s (%s): %s accesses, %d shards in %d region%s\n\n",
		path, format, thousands(int64(accesses)), shards, regions, plural); err != nil {
		return err
	}
	width := len("STRATEGY")
	for _, r := range results {
		width = max(width, len(r.Strategy))
	}
	// right-aligned numbers; the strategy names are padded so that they stay left-aligned
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintf(tw, "%-*s\tLIMIT\tACTIVE\tACCESSES\tACTIVATIONS\tPASSIVATIONS\t\n", width, "STRATEGY")
	described := map[string]string{}
	var order []string
	for _, r := range results {
		limit := "-"
		if r.Limit > 0 {
			limit = thousands(int64(r.Limit))
		}
		_, _ = fmt.Fprintf(tw, "%-*s\t%s\t%.2f %%\t%s\t%s\t%s\t\n", width, r.Strategy, limit, r.ActiveRate,
			thousands(r.Accesses), thousands(r.Activations), thousands(r.Passivations))
		if _, ok := described[r.Strategy]; !ok {
			order = append(order, r.Strategy)
			described[r.Strategy] = r.Description
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, _ = fmt.Fprintln(w)
	for _, name := range order {
		if _, err := fmt.Fprintf(w, "%s: %s\n", name, described[name]); err != nil {
			return err
		}
	}
	return nil
}

// thousands formats n with comma separators, as Akka's simulator prints counts.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
