package sim

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/membership"
)

// RealNames returns an Options.NodeName that names node i as a real member is named: the
// libp2p peer id of an Ed25519 key (52 characters, "12D3KooW…") and a TCP address ending in
// /p2p/<id>. The keys come from seed, so a run is reproducible. Sizes of member records, and
// of every message naming members, are then those of a real cluster.
func RealNames(seed uint64) func(i int) (membership.NodeID, string) {
	return func(i int) (membership.NodeID, string) {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		var key [ed25519.SeedSize]byte
		for j := range key {
			key[j] = byte(r.Uint32())
		}
		pub, err := crypto.UnmarshalEd25519PublicKey(ed25519.NewKeyFromSeed(key[:]).Public().(ed25519.PublicKey))
		if err != nil {
			panic(fmt.Sprintf("sim: an Ed25519 public key: %v", err))
		}
		id, err := peer.IDFromPublicKey(pub)
		if err != nil {
			panic(fmt.Sprintf("sim: peer id of an Ed25519 key: %v", err))
		}
		return membership.NodeID(id.String()), fmt.Sprintf("/ip4/10.%d.%d.%d/tcp/4001/p2p/%s", i>>16&255, i>>8&255, i&255, id)
	}
}
