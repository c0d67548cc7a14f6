package node

import (
	"context"
	"errors"
	"slices"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
)

// scanMetaOrPartial reads the live records of the cluster metadata under prefix through the
// metadata group (a read index: what the group committed). When the group cannot answer
// (no majority of its voters: the failure detector finds them unreachable, or the read
// timed out), an administrator's read (history, audit) still gets the copies of the
// metadata the members hold on their disks (remember.Store.ScanAll): this member's, when it
// is a voter (what its replica applied), and those of the others that answer. They may be
// stale (a copy lacks what the group committed after its member last applied), so the
// records come with a *PartialError naming what and the voters that did not answer. Any
// other failure is the error.
func (n *Node) scanMetaOrPartial(ctx context.Context, prefix, what string) ([]remember.Record, error) {
	if !n.metaUnreachable() {
		recs, err := n.store.Scan(ctx, prefix)
		if !errors.Is(err, remember.ErrNoQuorum) {
			return recs, err
		}
	}
	recs, missing, err := n.store.ScanAll(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if v := n.View(); v != nil && v.placement != nil {
		// Only the voters hold the metadata: a member that is not one has nothing to add.
		voters := v.placement.Meta()
		missing = slices.DeleteFunc(missing, func(id membership.NodeID) bool { return !slices.Contains(voters, id) })
	}
	if len(missing) > 0 {
		return recs, &PartialError{What: what, Missing: missing}
	}
	return recs, nil
}

// scanUnitOrAll reads the live records under prefix from a quorum of the replica set that
// holds them; when they span the shards' replica sets (a whole type's), from every member
// (remember.Store.ScanAll): the records, with a *PartialError naming what and the members
// that did not answer when some did not.
func (n *Node) scanUnitOrAll(ctx context.Context, prefix, what string) ([]remember.Record, error) {
	recs, err := n.store.Scan(ctx, prefix)
	if !errors.Is(err, remember.ErrSpansUnits) {
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

// metaUnreachable reports whether the failure detector finds a majority of the metadata's
// replicas unreachable: a quorum read of the metadata would wait for its timeout and fail.
func (n *Node) metaUnreachable() bool {
	v := n.View()
	if v == nil || v.placement == nil {
		return false
	}
	meta := v.placement.Meta()
	away := 0
	for _, id := range meta {
		if slices.Contains(v.Unreachable, id) {
			away++
		}
	}
	return len(meta) > 0 && len(meta)-away < len(meta)/2+1
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
