package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// benchJSON is bench --json.
type benchJSON struct {
	EntityType  string           `json:"entity_type"`
	Mode        string           `json:"mode"` // ask or tell
	Message     string           `json:"message"`
	Entities    int              `json:"entities"`
	Concurrency int              `json:"concurrency"`
	DurationMs  int64            `json:"duration_ms"` // measured
	Ops         int64            `json:"ops"`         // completed without error
	Errors      int64            `json:"errors"`
	FirstError  string           `json:"first_error,omitempty"`
	Throughput  float64          `json:"throughput"` // ops per second
	LatencyUs   benchLatencyJSON `json:"latency_us"`
}

type benchLatencyJSON struct {
	Min  int64   `json:"min"`
	P50  int64   `json:"p50"`
	P90  int64   `json:"p90"`
	P99  int64   `json:"p99"`
	Max  int64   `json:"max"`
	Mean float64 `json:"mean"`
}

// maxBenchConcurrency: each call is a stream, and libp2p admits about 64 concurrent
// inbound streams per peer and protocol.
const maxBenchConcurrency = 64

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "generate load through the admin client and print throughput and latency percentiles",
		Description: `Sends MESSAGE (--message, in the type's text codec) to --entities entities of --type
(ids bench-0 … bench-N-1, picked at random), from --concurrency callers for --duration,
through the member named by --node, and prints the throughput and the latency percentiles
(p50, p90, p99, max; HdrHistogram). --ask (the default) waits for each reply; --tell only for
the member to accept the message. Progress is shown every second (on stderr with --json).
Every call opens a stream to the member, so this measures the admin path, not the library's
in-process Tell and Ask. --timeout bounds connecting and each call. Exit code 0 when every
call succeeded, 3 when some failed, 1 when all failed.
Example, with the daemon's built-in counter type:
   shardctl bench --data-dir /tmp/a --type counter --entities 1000 --concurrency 16 --duration 10s
   shardctl bench --data-dir /tmp/a --type counter --tell --message inc --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Usage: "entity type `T` (required)"},
			&cli.IntFlag{Name: "entities", Value: 1000, Usage: "distinct entities to address (`N`)"},
			&cli.IntFlag{Name: "concurrency", Value: 16, Usage: fmt.Sprintf("concurrent callers (`C`, at most %d)", maxBenchConcurrency)},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "how long to run"},
			&cli.BoolFlag{Name: "ask", Usage: "ask and wait for each reply (default)"},
			&cli.BoolFlag{Name: "tell", Usage: "tell: wait only for the member to accept each message"},
			&cli.StringFlag{Name: "message", Value: "get", Usage: "the `MESSAGE` to send, as shardctl tell/ask would"},
		},
		Action: runBench,
	}
}

// benchRun is a running benchmark's shared state.
type benchRun struct {
	ops, errs atomic.Int64
	firstErr  atomic.Value
	mu        sync.Mutex
	hist      *hdrhistogram.Histogram // microseconds
}

func runBench(c *cli.Context) error {
	if _, err := cmdline.Positional(c, "", 0); err != nil {
		return err
	}
	typ := c.String("type")
	switch {
	case typ == "":
		return cmdline.Usagef("bench needs --type T (shardctl types lists them)")
	case c.Int("entities") < 1:
		return cmdline.Usagef("--entities %d: must be at least 1", c.Int("entities"))
	case c.Int("concurrency") < 1 || c.Int("concurrency") > maxBenchConcurrency:
		return cmdline.Usagef("--concurrency %d: must be between 1 and %d", c.Int("concurrency"), maxBenchConcurrency)
	case c.Duration("duration") <= 0:
		return cmdline.Usagef("--duration %v: must be positive", c.Duration("duration"))
	case c.Bool("ask") && c.Bool("tell"):
		return cmdline.Usagef("--ask and --tell exclude each other")
	}
	if err := admin.CheckTypeName(typ); err != nil {
		return cmdline.Usagef("--type: %v", err)
	}
	s, err := connect(c)
	if err != nil {
		return err
	}
	defer s.close()
	types, err := s.cl.Types(s.ctx)
	if err != nil {
		return callError(err)
	}
	if !slices.Contains(types, typ) {
		return cmdline.Usagef("unknown entity type %q: %s runs %s", typ, cmdline.ShortID(s.cl.Node().String()), cmdline.OrDash(strings.Join(types, ", ")))
	}
	mode := "ask"
	if c.Bool("tell") {
		mode = "tell"
	}
	progress := progressOut(c)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.Duration("duration"))
	defer cancel()
	fmt.Fprintf(progress, "bench %s: %s %q to %d entities, %d concurrent, for %v through %s\n",
		typ, mode, c.String("message"), c.Int("entities"), c.Int("concurrency"), c.Duration("duration"), cmdline.ShortID(s.cl.Node().String()))

	run := &benchRun{hist: hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range c.Int("concurrency") {
		wg.Go(func() { run.worker(ctx, c, s.cl, mode, uint64(w)) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	run.report(progress, start, done)
	elapsed := time.Since(start)

	out := run.result(typ, mode, c, elapsed)
	if c.Bool("json") {
		if err := cmdline.PrintJSON(c.App.Writer, out); err != nil {
			return err
		}
	} else {
		printBench(c.App.Writer, out)
	}
	switch {
	case out.Errors > 0 && out.Ops == 0:
		return cli.Exit(fmt.Sprintf("every call failed; first: %s", out.FirstError), exitFailed)
	case out.Errors > 0:
		return cli.Exit(fmt.Sprintf("partial result: %d calls failed; first: %s", out.Errors, out.FirstError), exitPartial)
	}
	return nil
}

// worker calls until ctx ends, recording each successful call's latency.
func (r *benchRun) worker(ctx context.Context, c *cli.Context, cl *admin.Client, mode string, w uint64) {
	local := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	defer func() {
		r.mu.Lock()
		r.hist.Merge(local)
		r.mu.Unlock()
	}()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), w))
	typ, msg, n, timeout := c.String("type"), []byte(c.String("message")), c.Int("entities"), c.Duration("timeout")
	for ctx.Err() == nil {
		id := "bench-" + strconv.Itoa(rnd.IntN(n))
		cctx, cancel := context.WithTimeout(context.Background(), timeout) // a call under way finishes after --duration
		began := time.Now()
		var err error
		if mode == "tell" {
			err = cl.Tell(cctx, typ, id, msg)
		} else {
			_, err = cl.Ask(cctx, typ, id, msg)
		}
		cancel()
		if err != nil {
			r.errs.Add(1)
			r.firstErr.CompareAndSwap(nil, fmt.Sprintf("%s %s: %v", mode, id, err))
			continue
		}
		_ = local.RecordValue(max(time.Since(began).Microseconds(), 1)) // beyond a minute: clamped by the histogram's range
		r.ops.Add(1)
	}
}

// report prints progress every second until done.
func (r *benchRun) report(w io.Writer, start time.Time, done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last int64
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			ops := r.ops.Load()
			fmt.Fprintf(w, "  %4.0fs  ops %-9d  %8d/s  errors %d\n", now.Sub(start).Seconds(), ops, ops-last, r.errs.Load())
			last = ops
		}
	}
}

func (r *benchRun) result(typ, mode string, c *cli.Context, elapsed time.Duration) benchJSON {
	out := benchJSON{EntityType: typ, Mode: mode, Message: c.String("message"), Entities: c.Int("entities"),
		Concurrency: c.Int("concurrency"), DurationMs: elapsed.Milliseconds(), Ops: r.ops.Load(), Errors: r.errs.Load()}
	if e, ok := r.firstErr.Load().(string); ok {
		out.FirstError = e
	}
	if elapsed > 0 {
		out.Throughput = float64(out.Ops) / elapsed.Seconds()
	}
	h := r.hist
	out.LatencyUs = benchLatencyJSON{Min: h.Min(), P50: h.ValueAtPercentile(50), P90: h.ValueAtPercentile(90),
		P99: h.ValueAtPercentile(99), Max: h.Max(), Mean: h.Mean()}
	return out
}

func printBench(w io.Writer, b benchJSON) {
	us := func(v int64) string { return (time.Duration(v) * time.Microsecond).String() }
	t := cmdline.NewTable(w)
	t.Row("ops", fmt.Sprintf("%d in %v (%d errors)", b.Ops, (time.Duration(b.DurationMs)*time.Millisecond).Round(time.Millisecond), b.Errors))
	t.Row("throughput", fmt.Sprintf("%.0f %ss/s", b.Throughput, b.Mode))
	t.Row("latency", fmt.Sprintf("p50 %s  p90 %s  p99 %s  max %s  (min %s, mean %s)", us(b.LatencyUs.P50), us(b.LatencyUs.P90),
		us(b.LatencyUs.P99), us(b.LatencyUs.Max), us(b.LatencyUs.Min), us(int64(b.LatencyUs.Mean))))
	if b.FirstError != "" {
		t.Row("first error", b.FirstError)
	}
	t.Flush()
}
