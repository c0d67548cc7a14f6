package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/tui"
)

func dashboardCommand() *cli.Command {
	return &cli.Command{
		Name:  "dashboard",
		Usage: "a live terminal dashboard of the cluster: members, shards, handoffs, events, actions",
		Description: `Opens a full-screen dashboard of the cluster as the member named by --node (or --data-dir)
sees it, refreshed every --refresh and followed live through the watch stream. Views, by
key: 1 Cluster (members, reachability, roles, age; stale marks when a member does not
answer), 2 Shards (shards per region as bars, per type; enter opens a region's shards and
entities), 3 Handoffs (in flight with phase, elapsed time, buffered messages and what holds each up, the last finished with
durations), 4 Events (the watch stream; t/n// filter by type, member, text), 5 Actions
(graceful shutdown of the selected member, with confirmation; an admin identity is
needed, --identity FILE). q or ctrl+c quits. --timeout bounds each call. NO_COLOR turns
colour off. When the member cannot be reached, the dashboard says so and tries again.
Example:
   shardctl dashboard --data-dir /tmp/a --identity admin.key
   NO_COLOR=1 shardctl dashboard --node /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW...`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "refresh", Usage: "ask for members and stats every `DURATION`", Value: 2 * time.Second},
		},
		Action: func(c *cli.Context) error {
			if _, err := cmdline.Positional(c, "", 0); err != nil {
				return err
			}
			if err := cmdline.PositiveFlag(c, "refresh"); err != nil {
				return err
			}
			if err := cmdline.PositiveFlag(c, "timeout"); err != nil {
				return err
			}
			if !term.IsTerminal(int(os.Stdout.Fd())) || !term.IsTerminal(int(os.Stdin.Fd())) {
				return cmdline.Usagef("the dashboard needs a terminal; for scripts use members, stats and watch --json")
			}
			s := &session{}
			if err := s.loadKeys(c); err != nil {
				return err
			}
			if s.key == nil {
				var err error
				if s.key, _, err = crypto.GenerateEd25519Key(nil); err != nil {
					return err
				}
			}
			addr, name, err := entryPoint(c)
			if err != nil {
				return err
			}
			target := addr
			if name != "" {
				target = name + " (through " + addr + ")"
			}
			var silent atomic.Int32 // tries in a row that a member accepted and never answered
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
			defer stop()
			cfg := tui.Config{
				Target:      target,
				Refresh:     c.Duration("refresh"),
				CallTimeout: c.Duration("timeout"),
				Connect: func(ctx context.Context) (tui.Source, error) {
					src, err := dashboardSource(ctx, *s, addr, name)
					switch {
					case err == nil:
						silent.Store(0)
					case configProblem(err):
						return nil, tui.Permanent(err) // the dashboard stops on it instead of retrying
					case acceptedButSilent(addr, err):
						// A member with no cluster key, when this side has one, can look like this
						// too: it reads our bytes as garbage and waits for more. After a few tries,
						// stop and say so.
						if n := silent.Add(1); n >= silentTries {
							return nil, tui.Permanent(fmt.Errorf("%w (%d tries in a row: the member is hung or flooded, or only one side has a --cluster-key)", err, n))
						}
					}
					return src, err
				},
			}
			return tui.Run(ctx, cfg, os.Stdin, os.Stdout)
		},
	}
}

// silentTries is how many tries in a row the dashboard makes at a member that accepts the
// connection and never completes the handshake before it stops on a configuration error.
const silentTries = 3

// acceptedButSilent reports whether a connection to addr timed out after the member
// accepted it: hung, flooded, or a cluster key on one side only.
func acceptedButSilent(addr string, err error) bool {
	return errors.Is(err, p2p.ErrHandshakeTimeout) || errors.Is(err, context.DeadlineExceeded) && (errors.Is(err, p2p.ErrHandshake) || acceptsTCP(addr))
}

// dashboardSource connects to the entry member (the one --node names) with the session's
// identity and cluster key.
func dashboardSource(ctx context.Context, s session, addr, name string) (tui.Source, error) {
	s.ctx = ctx
	cl, err := s.dial(addr)
	if err != nil {
		return nil, err
	}
	if name != "" {
		s.cl = cl
		m, err := s.member(name)
		if err != nil {
			cl.Close()
			return nil, err
		}
		if m.Node != cl.Node().String() {
			target, err := s.dialMember(m)
			cl.Close()
			if err != nil {
				return nil, err
			}
			cl = target
		}
	}
	src, err := tui.NewAdminSource(cl, admin.ClientConfig{Identity: s.key, Credential: s.cred, ClusterKey: s.psk})
	if err != nil {
		cl.Close()
		return nil, err
	}
	return src, nil
}
