package node

import (
	"context"
	"errors"
	"slices"

	"github.com/shardmesh/shardmesh/remember"
)

// scanOrPartial reads the live records under prefix, which lie in one unit, from a quorum
// of its replicas. When no quorum answers, an administrator's read (history) still gets
// what the members that answer hold (remember.Store.ScanAll): the records with a
// *PartialError naming what and the members missing. Any other failure is the error.
func (n *Node) scanOrPartial(ctx context.Context, prefix, what string) ([]remember.Record, error) {
	recs, err := n.store.Scan(ctx, prefix)
	if !errors.Is(err, remember.ErrNoQuorum) {
		return recs, err
	}
	recs, missing, err := n.store.ScanAll(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return recs, &PartialError{What: what, Missing: missing}
	}
	return recs, nil
}

// joinPartial adds the members missing from b to a (either may be nil), for a read made of
// several partial ones.
func joinPartial(a, b *PartialError) *PartialError {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	out := &PartialError{What: a.What, Missing: slices.Clone(a.Missing)}
	for _, id := range b.Missing {
		if !slices.Contains(out.Missing, id) {
			out.Missing = append(out.Missing, id)
		}
	}
	slices.Sort(out.Missing)
	return out
}
