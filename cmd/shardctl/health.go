package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// healthJSON is health --json.
type healthJSON struct {
	Node    string             `json:"node"`
	Live    bool               `json:"live"`
	Ready   bool               `json:"ready"`
	Status  string             `json:"status"`
	Serving bool               `json:"serving"`
	Regions []regionHealthJSON `json:"regions"`
	Reasons []string           `json:"reasons"` // why not ready (or not live)
	// Warnings: what is unsafe about how the member is set up (it may still be ready).
	Warnings []string `json:"warnings"`
}

type regionHealthJSON struct {
	EntityType  string `json:"entity_type"`
	Registered  bool   `json:"registered"`
	Ready       bool   `json:"ready"`
	Proxy       bool   `json:"proxy"`
	Coordinator string `json:"coordinator"`
}

// healthPoll is how often health --wait asks again.
const healthPoll = 250 * time.Millisecond

func healthCommand() *cli.Command {
	return &cli.Command{
		Name:  "health",
		Usage: "is the member live and ready? (exit 0 yes, 1 no)",
		Description: `Readiness: the member is Up, holds the majority lease, and each of its regions has
registered with its coordinator (once registered, a region stays ready, as in Akka, so a
coordinator moving does not fail every member's readiness). Liveness (--live): the member
answers and its loop takes a turn. Exit code 0 when ready (live, with --live), 1 when not or
when the member cannot be reached. --wait polls until it is, or the duration passes (a
daemon still starting, without its addrs file yet, counts as not ready).
Example:
   sharddaemon --data-dir /tmp/a ... & shardctl health --data-dir /tmp/a --wait 30s
   shardctl health --data-dir /tmp/a --live --json`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "wait", Usage: "poll until ready for at most `DURATION`"},
			&cli.BoolFlag{Name: "live", Usage: "check liveness only"},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			wait := c.Duration("wait")
			if wait < 0 {
				return cmdline.Usagef("--wait %v: must not be negative", wait)
			}
			ok := func(h *adminpb.HealthResponse) bool { return h.Live && (h.Ready || c.Bool("live")) }
			deadline := time.Now().Add(wait)
			var h *adminpb.HealthResponse
			var lastErr error
			for {
				h, lastErr = checkHealth(c)
				if (h != nil && ok(h)) || !time.Now().Add(healthPoll).Before(deadline) {
					break
				}
				time.Sleep(healthPoll)
			}
			if h == nil {
				if wait > 0 {
					return cli.Exit(fmt.Sprintf("not ready within --wait %v: %v", wait, lastErr), exitFailed)
				}
				return lastErr
			}
			if err := printHealth(c, h); err != nil {
				return err
			}
			if !ok(h) {
				what := "ready"
				if c.Bool("live") {
					what = "live"
				}
				return cli.Exit(fmt.Sprintf("%s is not %s: %s", cmdline.ShortID(h.Node), what, strings.Join(h.Reasons, "; ")), exitFailed)
			}
			return nil
		},
	}
}

// checkHealth asks the member once; a member that cannot be reached is an error.
func checkHealth(c *cli.Context) (*adminpb.HealthResponse, error) {
	s, err := connect(c)
	if err != nil {
		return nil, err
	}
	defer s.close()
	h, err := s.cl.Health(s.ctx)
	if err != nil {
		return nil, callError(err)
	}
	return h, nil
}

func printHealth(c *cli.Context, h *adminpb.HealthResponse) error {
	out := healthJSON{Node: h.Node, Live: h.Live, Ready: h.Ready, Status: h.Status, Serving: h.Serving,
		Regions: []regionHealthJSON{}, Reasons: append([]string{}, h.Reasons...), Warnings: append([]string{}, h.Warnings...)}
	for _, r := range h.Regions {
		out.Regions = append(out.Regions, regionHealthJSON{EntityType: r.EntityType, Registered: r.Registered, Ready: r.Ready, Proxy: r.Proxy, Coordinator: r.Coordinator})
	}
	if c.Bool("json") {
		return cmdline.PrintJSON(c.App.Writer, out)
	}
	t := cmdline.NewTable(c.App.Writer)
	t.Row("member", cmdline.ShortID(out.Node)+"  ("+out.Node+")")
	t.Row("live", yesNo(out.Live))
	t.Row("ready", yesNo(out.Ready))
	status := cmdline.OrDash(out.Status)
	if out.Serving {
		status += ", serving"
	} else if out.Live {
		status += ", not serving"
	}
	t.Row("status", status)
	var regions []string
	for _, r := range out.Regions {
		s := r.EntityType + ": "
		switch {
		case r.Registered:
			s += "registered with " + cmdline.ShortID(r.Coordinator)
		case r.Ready:
			s += "was registered (re-registering with " + cmdline.OrDash(cmdline.ShortID(r.Coordinator)) + ")"
		default:
			s += "not registered"
		}
		regions = append(regions, s)
	}
	t.Row("regions", cmdline.OrDash(strings.Join(regions, "; ")))
	for _, r := range out.Reasons {
		t.Row("why not", r)
	}
	for _, w := range out.Warnings {
		t.Row("warning", w)
	}
	t.Flush()
	return nil
}
