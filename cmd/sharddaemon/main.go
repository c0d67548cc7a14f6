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
	"runtime/debug"
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
	"github.com/shardmesh/shardmesh/tracing"
)

// Exit codes, for supervisors (docs/storage.md): restart on 1 and 3 with backoff, never
// on 2.
const (
	exitOK      = cmdline.ExitOK      // left the cluster gracefully
	exitFailed  = cmdline.ExitFailed  // failed at start or while running: a storage fault, a store that broke, a panic
	exitUsage   = cmdline.ExitUsage   // bad usage or configuration only: a flag, a value, a setting the cluster refused at join
	exitStopped = 3                   // downed or removed by the cluster (or refused at rejoin for it): restart it to join again
	exitRefused = cmdline.ExitRefused // a data command refused: a daemon holds the directory, a member answers, …
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// exitOnPanic ends the process with exitFailed on a panic of the goroutine it is deferred
// in, after printing it with its stack: the runtime would exit 2, which means bad usage.
func exitOnPanic(stderr io.Writer) {
	if r := recover(); r != nil {
		fmt.Fprintf(stderr, "sharddaemon: panic: %v\n%s", r, debug.Stack())
		os.Exit(exitFailed)
	}
}

// run runs sharddaemon with args, writing to stdout and stderr, and returns the exit code.
// The program calls itself what args[0] names: shardctl runs its offline data commands here
// as "shardctl", so their help and errors name the command the operator typed.
func run(args []string, stdout, stderr io.Writer) int {
	defer exitOnPanic(stderr)
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
	app := &cli.App{
		Name:      "sharddaemon",
		Usage:     "run a shardmesh member",
		UsageText: "sharddaemon --data-dir DIR [--listen MULTIADDR]... [--join MULTIADDR]... [--cluster-key FILE] [--config FILE]",
		Description: `Starts a member of a shardmesh cluster. Without --join it forms a new cluster; with
--join it joins through the given members; when none of them is in a cluster either (every
member restarted at once), the one with the lowest peer id forms it and the others join it.
Once listening it writes its dialable addresses
to DIR/addrs, one per line. SIGTERM or SIGINT leaves the cluster gracefully (a second one
exits at once).

Every configuration key can be set in the --config file, with SHARDMESH_<KEY> (upper case,
dots and dashes as underscores), or with --set key=value; flags win over the environment,
which wins over the file. 'sharddaemon config' lists every key with its default.

'sharddaemon data inspect|backup|restore|verify|rebuild|upgrade' and 'sharddaemon
remove-internal-data' work on stopped members' data directories: this binary owns their
format and links the store, and shardctl's commands of the same names run them here. So
does 'sharddaemon sim cluster', the capacity simulator, which runs the member's state
machines (shardctl sim cluster).

Example: a three-member cluster on one machine
   shardctl keygen --out cluster.key
   sharddaemon --data-dir /tmp/a --cluster-key cluster.key &
   sharddaemon --data-dir /tmp/b --cluster-key cluster.key --join $(head -1 /tmp/a/addrs) &
   sharddaemon --data-dir /tmp/c --cluster-key cluster.key --join $(head -1 /tmp/a/addrs) &
   shardctl members --data-dir /tmp/a --cluster-key cluster.key

Exit codes: 0 left gracefully (a command: done); 1 failed, at start or while running (a
damaged store, a full disk it cannot open on, a store that broke); 2 bad usage or
configuration only (a flag, a value, a setting that must be equal on every member, an open
mesh not asked for, a member credential its cluster does not accept); 3 downed or removed by
the cluster; 4 refused (a data command: a running daemon holds the directory).
A supervisor restarts it on 1 and 3, with backoff, and never on 2: see docs/storage.md.`,
		Flags: daemonFlags(),
		// Errors come back from Run so main prints them in one place, prefixed, and picks
		// the exit code (urfave's default handler would exit from inside Run).
		ExitErrHandler: func(*cli.Context, error) {},
		Commands:       append([]*cli.Command{configCommand()}, cmdline.Offline(dataCommand(), removeInternalDataCommand(), simCommand())...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdline.UnknownCommand(c, c.Args().First())
			}
			cfg, err := loadConfig(c)
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			*code, err = serve(cfg, c.String("entity-journal"))
			return err
		},
	}
	cmdline.Conventions(app)
	return app
}

// daemonFlags are the daemon's flags: --config, --set and one per flagged key.
func daemonFlags() []cli.Flag {
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
	return flags
}

// loadConfig merges the file, the environment and the flags.
func loadConfig(c *cli.Context) (config.Config, error) {
	cfg, err := config.Load(configSources(c))
	if err != nil {
		return cfg, err
	}
	if cfg.Node.DataDir == "" {
		return cfg, errors.New("no data directory: set --data-dir (or data-dir in the config file, or SHARDMESH_DATA_DIR)")
	}
	return cfg, nil
}

// configSources are the file, the environment and the flags of the command line.
func configSources(c *cli.Context) config.Sources {
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
	return config.Sources{File: c.String("config"), LookupEnv: os.LookupEnv, Flags: sets}
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

// serve runs the member until it stops and returns the exit code. A member that cannot
// start returns an error instead, one line for main to print like a usage error, with the
// exit code of its kind: 2 for what the operator must fix in the flags, the configuration
// or the files they name, 1 for a failure (storage, the network).
func serve(cfg config.Config, journalPath string) (int, error) {
	// Signals are taken from the start: one that comes while the member starts (a
	// supervisor stopping it at once) is handled below, never the default kill.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	log := newLogger(cfg.Node)
	p2p.RouteLibp2pLogs(log.Handler())
	if err := checkEntityTypes(cfg); err != nil {
		return exitUsage, cmdline.Usagef("%v", err)
	}
	admins, err := config.PeerIDs("admin-allow", cfg.Node.AdminAllow)
	if err != nil {
		return exitUsage, cmdline.Usagef("%v", err)
	}
	var j *journal
	if journalPath != "" {
		if j, err = openJournal(journalPath); err != nil {
			return exitUsage, cmdline.Usagef("%v", err)
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
			return exitUsage, cmdline.Usagef("cannot serve metrics: %v", err)
		}
		defer met.close()
		opts = append(opts, shardmesh.WithMetrics(met.reg))
		if adminMetrics, err = adminserver.NewMetrics(met.reg); err != nil {
			return exitFailed, cmdline.Failf("cannot register metrics: %v", err)
		}
	}
	tp, err := tracing.FromEnv(context.Background(), "sharddaemon", cfg.Node.DataDir)
	if err != nil {
		return exitUsage, cmdline.Usagef("tracing: %v", err)
	}
	if tp != nil {
		opts = append(opts, shardmesh.WithTracing(tp))
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(ctx); err != nil { // flushes what it holds
				log.Warn("tracing: spans not all exported at exit", "err", err)
			}
		}()
	}
	sys, err := shardmesh.Start(context.Background(), cfg, opts...)
	if err != nil {
		if errors.Is(err, datadir.ErrInUse) || errors.Is(err, p2p.ErrInsecureKeyFile) || errors.Is(err, p2p.ErrKeyFile) || startRefused(err) {
			return exitUsage, cmdline.Usagef("cannot start: %v", err)
		}
		return exitFailed, cmdline.Failf("cannot start: %v", err)
	}
	log = log.With("node", sys.ID().Short()) // as on the member's own lines
	if err := builtinTypes(sys, cfg.Node.EntityTypes, j); err != nil {
		sys.Close()
		return exitFailed, cmdline.Failf("cannot start entity types: %v", err)
	}
	srv := adminserver.Serve(sys.Node().Host(), adminserver.NodeBackend(sys.Node()), adminserver.Config{
		Admins:       admins,
		Authorities:  sys.Node().Trust().Authorities(),
		ReadOnlyOpen: cfg.Node.AdminReadOnlyOpen,
		QueryTimeout: cfg.Sharding.ShardRegionQueryTimeout,
		Logger:       log.With("component", "admin"),
		Metrics:      adminMetrics,
	})
	if met != nil {
		probes{node: string(sys.ID()), ping: sys.Node().Ping, health: srv.Health, log: log}.register(met.mux)
		if err := met.serve(cfg.Node.DataDir); err != nil {
			srv.Close(context.Background())
			sys.Close()
			return exitFailed, cmdline.Failf("cannot serve metrics: %v", err)
		}
	}
	if !sys.Node().Trust().HasAdmins() {
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
	select {
	case <-sys.Done():
	case sig := <-signals:
		if !sys.Node().View().Joined {
			// Nothing to hand off and nobody to tell: a member still looking for its seeds
			// (a wrong --join address, say) must not wait for a leave that cannot happen.
			log.Info("not a member of a cluster yet: exiting without leaving", "signal", sig.String())
			srv.Close(context.Background())
			sys.Close()
			return exitOK, nil
		}
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
			return exitFailed, nil
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
	case sys.Node().Failure() != nil:
		log.Error("the member failed", "err", sys.Node().Failure())
		return exitFailed, nil
	case reason == nil, reason.Reason == membership.StopLeft:
		return exitOK, nil
	case reason.Reason == membership.StopJoinRefused:
		return exitUsage, nil
	default:
		return exitStopped, nil
	}
}
