package node

import (
	"fmt"
	"math"
)

// Coordinator terms. An allocation epoch is term<<32|seq, and durable entity state is fenced
// by epochs in the replicated store, which outlives the cluster: after a full-cluster restart
// up-numbers start from 1 again, so a term that was the coordinator's up-number would issue
// epochs below the fence floors the state already has, and every save would be refused.
// So each coordinator claims its term in the store (ct␀TYPE) before it issues an epoch
// (Core.claimTerm):
//
//	term = (generation+1)<<16 | (up-number & 0xffff), generation = stored term >> 16
//
// which is above every term claimed before (a majority write, read back by every later
// majority read), and differs between two coordinators of one generation (their
// up-numbers differ), so no two coordinators ever issue the same epoch.

// nextTerm returns the term a coordinator on member up-number up claims after stored.
func nextTerm(stored, up uint64) (uint64, error) {
	gen := stored>>16 + 1
	t := gen<<16 | up&0xffff
	if t > math.MaxUint32 {
		return 0, fmt.Errorf("coordinator terms exhausted (stored term %d)", stored)
	}
	return t, nil
}
