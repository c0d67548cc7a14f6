package main

import (
	"errors"
	"io/fs"
	"os"

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
