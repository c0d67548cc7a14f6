// Command sharddaemon runs one shardmesh member: it joins (or forms) a cluster over libp2p,
// keeps its membership, and serves the admin protocol that shardctl speaks.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/admin/adminserver"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
)

// Exit codes.
const (
	exitOK      = cmdline.ExitOK      // left the cluster gracefully
	exitFailed  = cmdline.ExitFailed  // failed at start or while running
	exitUsage   = cmdline.ExitUsage   // bad flags or configuration; refused at join for a setting that differs
	exitStopped = 3                   // downed or removed by the cluster: restart it to join again
	exitRefused = cmdline.ExitRefused // a data command refused: a daemon holds the directory, a member answers, …
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run runs sharddaemon with args, writing to stdout and stderr, and returns the exit code.
// The program calls itself what args[0] names: shardctl runs its offline data commands here
// as "shardctl", so their help and errors name the command the operator typed.
func run(args []string, stdout, stderr io.Writer) int {
	code := exitOK
	app := newApp(&code)
	if len(args) > 0 && filepath.Base(args[0]) == "shardctl" {
		app.Name, app.HelpName = "shardctl", "shardctl"
	}
	app.Writer, app.ErrWriter = stdout, stderr
	if err := app.Run(args); err != nil {
		fmt.Fprintln(stderr, app.Name+":", err)
		return cmdline.ExitCode(err, exitUsage)
	}
	return code
}

func newApp(code *int) *cli.App {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "configuration `FILE` (YAML, TOML or JSON; keys as in reference.conf: cluster.*, sharding.*)", EnvVars: []string{"SHARDMESH_CONFIG"}},
		&cli.StringSliceFlag{Name: "set", Usage: "set any configuration key, e.g. --set cluster.split-brain-resolver.stable-after=5s (repeatable)"},
		&cli.StringFlag{Name: "entity-journal", Usage: "append the built-in counter's incarnation starts, stops and acknowledged changes to `FILE`, one JSON line each (for the chaos checker, e2e/chaos; off by default)"},
	}
	for _, k := range config.Schema {
		if k.Flag == "" {
			continue
		}
		if k.List {
			flags = append(flags, &cli.StringSliceFlag{Name: k.Flag, Usage: k.Usage + " [$" + k.Env() + "]"})
		} else {
			flags = append(flags, &cli.StringFlag{Name: k.Flag, Usage: k.Usage + " [$" + k.Env() + "]"})
		}
	}
	return &cli.App{
		Name:      "sharddaemon",
		Usage:     "run a shardmesh member",
		UsageText: "sharddaemon --data-dir DIR [--listen MULTIADDR]... [--join MULTIADDR]... [--cluster-key FILE] [--config FILE]",
		Description: `Starts a member of a shardmesh cluster. Without --join it forms a new cluster; with
--join it joins through the given members. Once listening it writes its dialable addresses
to DIR/addrs, one per line. SIGTERM or SIGINT leaves the cluster gracefully (a second one
exits at once).

Every configuration key can be set in the --config file, with SHARDMESH_<KEY> (upper case,
dots and dashes as underscores), or with --set key=value; flags win over the environment,
which wins over the file. 'sharddaemon config' lists every key with its default.

'sharddaemon data inspect|backup|restore' and 'sharddaemon remove-internal-data' work on
stopped members' data directories: this binary owns their format and links the store, and
shardctl's commands of the same names run them here. So does 'sharddaemon sim cluster', the
capacity simulator, which runs the member's state machines (shardctl sim cluster).

Example: a three-member cluster on one machine
   shardctl keygen --out cluster.key
   sharddaemon --data-dir /tmp/a --cluster-key cluster.key &
   sharddaemon --data-dir /tmp/b --cluster-key cluster.key --join $(head -1 /tmp/a/addrs) &
   sharddaemon --data-dir /tmp/c --cluster-key cluster.key --join $(head -1 /tmp/a/addrs) &
   shardctl members --data-dir /tmp/a --cluster-key cluster.key

Exit codes: 0 left gracefully, 1 failed, 2 bad usage or configuration (or refused at join
for a setting that must be equal on every member), 3 downed or removed by the cluster.`,
		Flags:           flags,
		HideHelpCommand: true,
		// Errors come back from Run so main prints them in one place, prefixed, and picks
		// the exit code (urfave's default handler would exit from inside Run).
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: append([]*cli.Command{{
			Name:   "config",
			Usage:  "list every configuration key with its environment variable",
			Action: listKeys,
		}}, cmdline.Offline(dataCommand(), removeInternalDataCommand(), simCommand())...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("unexpected argument %q (see --help)", c.Args().First()), exitUsage)
			}
			cfg, err := loadConfig(c)
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			*code = serve(cfg, c.String("entity-journal"))
			return nil
		},
	}
}

// loadConfig merges the file, the environment and the flags.
func loadConfig(c *cli.Context) (config.Config, error) {
	var sets []string
	for _, k := range config.Schema {
		if k.Flag == "" || !c.IsSet(k.Flag) {
			continue
		}
		if k.List {
			sets = append(sets, k.Path+"="+strings.Join(c.StringSlice(k.Flag), ","))
		} else {
			sets = append(sets, k.Path+"="+c.String(k.Flag))
		}
	}
	sets = append(sets, c.StringSlice("set")...)
	cfg, err := config.Load(config.Sources{File: c.String("config"), LookupEnv: os.LookupEnv, Flags: sets})
	if err != nil {
		return cfg, err
	}
	if cfg.Node.DataDir == "" {
		return cfg, errors.New("no data directory: set --data-dir (or data-dir in the config file, or SHARDMESH_DATA_DIR)")
	}
	return cfg, nil
}

func listKeys(*cli.Context) error {
	for _, k := range config.Schema {
		fmt.Printf("%s\n    %s\n    env %s", k.Path, k.Usage, k.Env())
		if k.Flag != "" {
			fmt.Printf(", flag --%s", k.Flag)
		}
		fmt.Println()
	}
	fmt.Println("cluster.role.<role>.min-nr-of-members\n    members with that role needed before any is moved Up")
	return nil
}

func newLogger(cfg config.Node) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// serve runs the member until it stops and returns the exit code.
func serve(cfg config.Config, journalPath string) int {
	log := newLogger(cfg.Node)
	for _, name := range cfg.Node.EntityTypes {
		if !slices.Contains(builtinNames, name) {
			log.Error("entity-types: unknown built-in type ("+strings.Join(builtinNames, ", ")+")", "type", name)
			return exitUsage
		}
	}
	admins, err := config.PeerIDs("admin-allow", cfg.Node.AdminAllow)
	if err != nil {
		log.Error(err.Error())
		return exitUsage
	}
	var j *journal
	if journalPath != "" {
		if j, err = openJournal(journalPath); err != nil {
			log.Error(err.Error())
			return exitUsage
		}
		defer j.Close()
	}
	opts := []shardmesh.Option{shardmesh.WithLogger(log)}
	if j != nil {
		opts = append(opts, shardmesh.WithServingWatch(func(serving bool, at time.Time) {
			ev := "lapse"
			if serving {
				ev = "serve"
			}
			if err := j.recordAt(JournalRecord{Event: ev}, at); err != nil {
				log.Warn(err.Error())
			}
		}))
	}
	var met *metricsServer
	var adminMetrics *adminserver.Metrics
	if cfg.Node.MetricsListen != "" {
		if met, err = listenMetrics(cfg.Node.MetricsListen, log.With("component", "metrics")); err != nil {
			log.Error("cannot serve metrics", "err", err)
			return exitUsage
		}
		defer met.close()
		opts = append(opts, shardmesh.WithMetrics(met.reg))
		if adminMetrics, err = adminserver.NewMetrics(met.reg); err != nil {
			log.Error("cannot register metrics", "err", err)
			return exitFailed
		}
	}
	sys, err := shardmesh.Start(context.Background(), cfg, opts...)
	if err != nil {
		log.Error("cannot start", "err", err)
		if errors.Is(err, datadir.ErrInUse) || errors.Is(err, p2p.ErrInsecureKeyFile) {
			return exitUsage
		}
		return exitFailed
	}
	log = log.With("node", sys.ID().Short()) // as on the member's own lines
	if err := builtinTypes(sys, cfg.Node.EntityTypes, j); err != nil {
		log.Error("cannot start entity types", "err", err)
		sys.Close()
		return exitFailed
	}
	srv := adminserver.Serve(sys.Node().Host(), adminserver.NodeBackend(sys.Node()), adminserver.Config{
		Admins:       admins,
		ReadOnlyOpen: cfg.Node.AdminReadOnlyOpen,
		QueryTimeout: cfg.Sharding.ShardRegionQueryTimeout,
		Logger:       log.With("component", "admin"),
		Metrics:      adminMetrics,
	})
	if met != nil {
		if err := met.serve(cfg.Node.DataDir); err != nil {
			log.Error("cannot serve metrics", "err", err)
			srv.Close(context.Background())
			sys.Close()
			return exitFailed
		}
	}
	if len(admins) == 0 {
		log.Info("no admin identity allowed: calls that change the cluster (shutdown, leave, down) are refused; allow one with --admin-allow PEER_ID (shardctl keygen admin)")
	}

	if j != nil {
		// The member stops serving when its node stops (left, downed, removed): from then
		// on its entities handle nothing, whether or not they got their stop message.
		go func() {
			<-sys.Done()
			if err := j.record(JournalRecord{Event: "halt", Node: string(sys.Node().ID())}); err != nil {
				log.Warn(err.Error())
			}
		}()
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sys.Done():
	case sig := <-signals:
		log.Info("handing off shards and leaving the cluster (send the signal again to exit at once)", "signal", sig.String())
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Sharding.HandoffTimeout+10*time.Second)
		go func() {
			select {
			case <-signals:
				log.Warn("second signal: exiting without leaving")
				cancel()
			case <-ctx.Done():
			}
		}()
		err := sys.Leave(ctx)
		cancel()
		if err != nil {
			log.Error("did not leave cleanly", "err", err)
			sys.Close()
			return exitFailed
		}
	}
	reason := sys.Node().StopReason()
	// Let admin calls in progress hear why the member stopped (a shutdown's caller waits
	// for "left") before the host closes.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	srv.Close(ctx)
	cancel()
	sys.Close()
	switch {
	case reason == nil, reason.Reason == membership.StopLeft:
		return exitOK
	case reason.Reason == membership.StopJoinRefused:
		return exitUsage
	default:
		return exitStopped
	}
}
