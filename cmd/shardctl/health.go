package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/config/value"
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
	Store   *storeHealthJSON   `json:"store,omitempty"`
	Reasons []string           `json:"reasons"` // why not ready (or not live)
	// Warnings: what is unsafe about how the member is set up (it may still be ready).
	Warnings []string `json:"warnings"`
}

// storeHealthJSON is the member's replica of the store: its disk and its refill.
type storeHealthJSON struct {
	Dir            string `json:"dir"`
	FreeBytes      uint64 `json:"free_bytes"`
	TotalBytes     uint64 `json:"total_bytes"`
	MinFreeBytes   uint64 `json:"min_free_bytes"`
	DiskFull       bool   `json:"disk_full"`
	FullSince      string `json:"full_since,omitempty"`
	RefusedCommits uint64 `json:"refused_commits"`
	SpaceError     string `json:"space_error,omitempty"`
	Refilling      bool   `json:"refilling"`
	RefillReason   string `json:"refill_reason,omitempty"`
	RefillSynced   uint32 `json:"refill_synced"`
	RefillNeed     uint32 `json:"refill_need"`
}

type regionHealthJSON struct {
	EntityType  string `json:"entity_type"`
	Registered  bool   `json:"registered"`
	Ready       bool   `json:"ready"`
	Proxy       bool   `json:"proxy"`
	Coordinator string `json:"coordinator"`
	NoNewShards bool   `json:"no_new_shards"` // its coordinator knows it takes no new shards (disk full)
}

// healthPoll is how often health --wait asks again.
const healthPoll = 250 * time.Millisecond

func healthCommand() *cli.Command {
	return &cli.Command{
		Name:  "health",
		Usage: "is the member live and ready? (exit 0 yes, 1 no)",
		Description: `Readiness: the member is Up, holds the majority lease, each of its regions has
registered with its coordinator (once registered, a region stays ready, as in Akka, so a
coordinator moving does not fail every member's readiness), its store's disk is not full
(below store.min-free-space it refuses writes) and its store is not refilling from its
peers (after a rebuild). Liveness (--live): the member
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
		out.Regions = append(out.Regions, regionHealthJSON{EntityType: r.EntityType, Registered: r.Registered, Ready: r.Ready, Proxy: r.Proxy, Coordinator: r.Coordinator, NoNewShards: r.NoNewShards})
	}
	if s := h.Store; s != nil {
		out.Store = &storeHealthJSON{Dir: s.Dir, FreeBytes: s.FreeBytes, TotalBytes: s.TotalBytes, MinFreeBytes: s.MinFreeBytes, DiskFull: s.DiskFull,
			RefusedCommits: s.RefusedCommits, SpaceError: s.SpaceError, Refilling: s.Refilling, RefillReason: s.RefillReason,
			RefillSynced: s.RefillSynced, RefillNeed: s.RefillNeed}
		if s.FullSinceUnixMs != 0 {
			out.Store.FullSince = time.UnixMilli(s.FullSinceUnixMs).UTC().Format(time.RFC3339)
		}
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
		case r.Registered && r.NoNewShards:
			s += "registered with " + cmdline.ShortID(r.Coordinator) + ", taking no new shards (disk full)"
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
	if s := out.Store; s != nil {
		t.Row("store", storeText(s))
	}
	for _, r := range out.Reasons {
		t.Row("why not", r)
	}
	for _, w := range out.Warnings {
		t.Row("warning", w)
	}
	t.Flush()
	return nil
}

// storeText is the store's row of health: its free space and reserve, or what is wrong.
func storeText(s *storeHealthJSON) string {
	var parts []string
	switch {
	case s.SpaceError != "":
		parts = append(parts, "free space unknown: "+s.SpaceError)
	case s.DiskFull:
		parts = append(parts, fmt.Sprintf("DISK FULL: %s free of %s, below the reserve of %s (writes refused, no new shards)",
			value.FormatSize(s.FreeBytes), value.FormatSize(s.TotalBytes), value.FormatSize(s.MinFreeBytes)))
	case s.MinFreeBytes > 0:
		parts = append(parts, fmt.Sprintf("%s free of %s (reserve %s)", value.FormatSize(s.FreeBytes), value.FormatSize(s.TotalBytes), value.FormatSize(s.MinFreeBytes)))
	default:
		parts = append(parts, fmt.Sprintf("%s free of %s (no reserve)", value.FormatSize(s.FreeBytes), value.FormatSize(s.TotalBytes)))
	}
	if s.Refilling {
		parts = append(parts, fmt.Sprintf("refilling from its peers: %d of %d synced", s.RefillSynced, s.RefillNeed))
	}
	return strings.Join(parts, "; ")
}
