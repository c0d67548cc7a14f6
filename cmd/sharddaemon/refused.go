package main

import (
	"errors"

	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/trust"
)

// startRefused reports whether the member refused to start for how it is set up, not for a
// fault: an open mesh it was not told to run, or a member credential it cannot join with.
// Those exit with the usage code.
func startRefused(err error) bool {
	for _, e := range []error{p2p.ErrOpenMesh, trust.ErrNoCredential, trust.ErrBadCredential, trust.ErrUntrustedAuthority} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
