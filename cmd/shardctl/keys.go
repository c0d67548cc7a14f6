package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/trust"
)

// loadKeys reads the cluster key, the admin identity and its admin credential the global
// flags name (--credential, else IDENTITY.credential when it exists).
func (s *session) loadKeys(c *cli.Context) error {
	var err error
	if f := c.String("cluster-key"); f != "" {
		if s.psk, err = p2p.LoadClusterKey(f); err != nil {
			return cli.Exit("--cluster-key: "+err.Error(), exitUsage)
		}
	}
	identity := c.String("identity")
	if identity != "" {
		if s.key, err = p2p.LoadIdentity(identity); err != nil {
			return cli.Exit("--identity: "+err.Error(), exitUsage)
		}
	}
	path := c.String("credential")
	if path == "" && identity != "" {
		if _, err := os.Stat(identity + ".credential"); err == nil || !errors.Is(err, fs.ErrNotExist) {
			path = identity + ".credential"
		}
	}
	if path == "" {
		return nil
	}
	if s.key == nil {
		return cli.Exit("--credential "+path+": give the identity it was issued to with --identity FILE", exitUsage)
	}
	cred, err := trust.ReadCredentialFile(path)
	if err != nil {
		return cli.Exit("--credential: "+err.Error(), exitUsage)
	}
	s.cred = cred.Raw
	return nil
}

// dialError says why shardctl could not reach the member at addr: a peer id that is not
// the member's first, then a refused handshake (another cluster key), a handshake that did
// not complete in time (an overloaded or flooded member), or no answer at all.
func dialError(ctx context.Context, addr string, err error) error {
	switch {
	case errors.Is(err, p2p.ErrPeerIDMismatch):
		msg := err.Error()
		if i := strings.Index(msg, p2p.ErrPeerIDMismatch.Error()); i > 0 {
			msg = msg[i:]
		}
		return cli.Exit(msg+" (check --node, or the addrs file of --data-dir)", exitFailed)
	case errors.Is(err, p2p.ErrHandshakeTimeout):
		return cli.Exit(fmt.Sprintf("cannot reach %s: the member accepted the connection but did not complete the handshake within --timeout; "+
			"it may be overloaded or flooded with connections (its log says so); this does not mean the key is wrong", addr), exitFailed)
	case errors.Is(err, p2p.ErrHandshake):
		return cli.Exit(fmt.Sprintf("cannot reach %s: the member refused the handshake: it holds another cluster key than --cluster-key (or only one side has one), "+
			"or its allow-list does not include this client (%v)", addr, err), exitFailed)
	case ctx.Err() != nil:
		return cli.Exit(fmt.Sprintf("cannot reach %s within --timeout", addr), exitFailed)
	}
	return cli.Exit(err.Error(), exitFailed)
}
