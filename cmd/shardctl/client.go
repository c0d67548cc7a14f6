package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/p2p"
)

// globalFlags are the flags every command that talks to a member shares.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "node", Usage: "`MULTIADDR` of the member to talk to, ending in /p2p/<peer id>", EnvVars: []string{"SHARDMESH_NODE"}},
		&cli.StringFlag{Name: "data-dir", Usage: "data `DIR` of a member running on this machine (its addrs file names it)", EnvVars: []string{"SHARDMESH_DATA_DIR"}},
		&cli.StringFlag{Name: "cluster-key", Usage: "the cluster's key `FILE`, if the cluster has one", EnvVars: []string{"SHARDMESH_CLUSTER_KEY"}},
		&cli.StringFlag{Name: "identity", Usage: "admin identity key `FILE` (shardctl keygen admin); needed for calls that change the cluster", EnvVars: []string{"SHARDMESH_IDENTITY"}},
		&cli.DurationFlag{Name: "timeout", Usage: "give up after this long", Value: 10 * time.Second, EnvVars: []string{"SHARDMESH_TIMEOUT"}},
		&cli.BoolFlag{Name: "json", Usage: "print JSON instead of tables"},
	}
}

// dial connects to the member named by the global flags. The context carries --timeout.
func dial(c *cli.Context) (*admin.Client, context.Context, context.CancelFunc, error) {
	addr := c.String("node")
	if addr == "" && c.String("data-dir") != "" {
		addrs, err := node.ReadAddrs(c.String("data-dir"))
		if err != nil {
			return nil, nil, nil, cli.Exit(err.Error(), exitUsage)
		}
		if len(addrs) == 0 {
			return nil, nil, nil, cli.Exit("the addrs file in "+c.String("data-dir")+" is empty", exitFailed)
		}
		addr = addrs[0]
	}
	if addr == "" {
		return nil, nil, nil, cli.Exit("which member? set --node MULTIADDR, $SHARDMESH_NODE or --data-dir DIR", exitUsage)
	}
	var psk pnet.PSK
	if f := c.String("cluster-key"); f != "" {
		var err error
		if psk, err = p2p.LoadClusterKey(f); err != nil {
			return nil, nil, nil, cli.Exit(err.Error(), exitUsage)
		}
	}
	var key crypto.PrivKey
	if f := c.String("identity"); f != "" {
		var err error
		if key, err = p2p.LoadIdentity(f); err != nil {
			return nil, nil, nil, cli.Exit(err.Error(), exitUsage)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Duration("timeout"))
	cl, err := admin.Dial(ctx, admin.ClientConfig{Node: addr, Identity: key, ClusterKey: psk})
	if err != nil {
		cancel()
		if errors.Is(err, p2p.ErrHandshake) {
			return nil, nil, nil, cli.Exit(fmt.Sprintf("%v\n(the member refused the connection: check --cluster-key)", err), exitFailed)
		}
		return nil, nil, nil, cli.Exit(err.Error(), exitFailed)
	}
	return cl, ctx, func() { cl.Close(); cancel() }, nil
}

// callError turns a failed admin call into the documented exit code.
func callError(err error) error {
	var ce *admin.CallError
	if errors.As(err, &ce) {
		switch ce.Code {
		case adminpb.Code_BAD_REQUEST:
			return cli.Exit(ce.Message, exitUsage)
		case adminpb.Code_PARTIAL:
			return cli.Exit(ce.Message, exitPartial)
		case adminpb.Code_REFUSED:
			return cli.Exit(ce.Message, exitRefused)
		}
		return cli.Exit(ce.Message, exitFailed)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return cli.Exit("no answer within --timeout", exitFailed)
	}
	return cli.Exit(err.Error(), exitFailed)
}
