package main

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/cmdline"
	"github.com/shardmesh/shardmesh/p2p"
)

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:  "keygen",
		Usage: "make a cluster key (or, with 'admin', an admin identity)",
		Description: `Writes a new random cluster key: the private-network key every member (and shardctl)
must hold to connect at all. The file is created with mode 0600 and never overwritten.

Example:
   shardctl keygen --out cluster.key
   sharddaemon --data-dir /tmp/a --cluster-key cluster.key`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "out", Usage: "write the key to `FILE`", Value: "cluster.key"}},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdline.UnknownCommand(c, c.Args().First())
			}
			if err := p2p.WriteClusterKey(c.String("out")); err != nil {
				return cli.Exit(err.Error(), exitFailed)
			}
			fmt.Fprintf(c.App.Writer, "wrote cluster key %s; give it to every member with --cluster-key %s\n", c.String("out"), c.String("out"))
			return nil
		},
		Subcommands: []*cli.Command{keygenAuthorityCommand(), {
			Name:  "admin",
			Usage: "make an admin identity for calls that change the cluster",
			Description: `Writes a new admin identity (an Ed25519 key, mode 0600) and prints its peer id. List the
peer id in each daemon's --admin-allow, and pass the file to shardctl with --identity.

Example:
   shardctl keygen admin --out admin.key
   sharddaemon ... --admin-allow 12D3KooW...`,
			Flags: []cli.Flag{&cli.StringFlag{Name: "out", Usage: "write the identity to `FILE`", Value: "admin.key"}},
			Action: func(c *cli.Context) error {
				id, err := writeKey(c)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return cmdline.PrintJSON(c.App.Writer, map[string]string{"file": c.String("out"), "peer_id": id.String()})
				}
				fmt.Fprintf(c.App.Writer, "wrote admin identity %s\npeer id: %s\nallow it on each daemon with --admin-allow %s\n", c.String("out"), id, id)
				return nil
			},
		}},
	}
}

// writeKey writes a new key to --out (the command takes no arguments) and returns its peer
// id: an admin identity or a cluster authority.
func writeKey(c *cli.Context) (peer.ID, error) {
	if _, err := cmdline.Positional(c, "", 0); err != nil {
		return "", err
	}
	key, err := p2p.CreateIdentity(c.String("out"))
	if err != nil {
		return "", cli.Exit(err.Error(), exitFailed)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return "", cli.Exit(err.Error(), exitFailed)
	}
	return id, nil
}
