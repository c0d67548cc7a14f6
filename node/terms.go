package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// Coordinator terms. An allocation epoch is term<<32|seq, and durable entity state is fenced
// by epochs in the replicated store, which outlives the cluster: after a full-cluster restart
// up-numbers start from 1 again, so a term that was the coordinator's up-number would issue
// epochs below the fence floors the state already has, and every save would be refused.
// So each coordinator claims its term in the store (ct␀TYPE) before it issues an epoch:
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

// claimTerm claims the term of the coordinator of typ that started here as up-number up,
// and gives it to the engine; it tries again until it succeeds, the coordinator here is
// another one, or the member stops.
func (n *Node) claimTerm(typ string, up uint64) {
	defer n.wg.Done()
	defer n.caught("claiming a coordinator term")
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		term, err := n.storeTerm(ctx, typ, up)
		cancel()
		if err == nil {
			n.command(func(now time.Time) { n.eng.SetCoordinatorTerm(now, typ, up, term) })
			n.log.Info("coordinator term claimed", "type", typ, "term", term)
			return
		}
		if n.ctx.Err() != nil {
			return
		}
		if attempt%10 == 0 {
			n.log.Warn("coordinator term not claimed yet; the coordinator waits", "type", typ, "err", err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		still, err := onLoop(n.ctx, n, func(time.Time) (bool, error) {
			c := n.eng.Coordinator(typ)
			return c != nil && c.UpNumber() == up, nil
		})
		if err != nil || !still {
			return
		}
	}
}

// storeTerm reads the last claimed term of typ from a read quorum and writes the next one
// to a write quorum.
func (n *Node) storeTerm(ctx context.Context, typ string, up uint64) (uint64, error) {
	key := datadir.Key(datadir.FamilyTerm, typ)
	rec, found, err := n.store.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	var stored uint64
	if found {
		if stored, err = strconv.ParseUint(string(rec.Value), 10, 64); err != nil {
			return 0, errors.New("the stored coordinator term " + strconv.Quote(string(rec.Value)) + " is not a number")
		}
	}
	term, err := nextTerm(stored, up)
	if err != nil {
		return 0, err
	}
	if err := n.store.Write(ctx, remember.Write{Key: key, Value: strconv.AppendUint(nil, term, 10)}); err != nil {
		return 0, err
	}
	return term, nil
}
