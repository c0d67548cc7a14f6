package engine

import (
	"time"

	"github.com/shardmesh/shardmesh/shard"
)

// LeaseOpKind says what to do with a shard's lease.
type LeaseOpKind uint8

// Lease operations.
const (
	LeaseAcquire LeaseOpKind = iota // acquire it; answer with LeaseAcquired, later perhaps LeaseLost
	LeaseRelease                    // release it; no answer
)

func (k LeaseOpKind) String() string { return [...]string{"acquire", "release"}[k] }

// LeaseOp is work on the lease of a local shard (use-lease).
type LeaseOp struct {
	Kind  LeaseOpKind
	Type  string
	Shard shard.ID
	// Gen names the incarnation of the local shard that asked (see StoreOp.Gen).
	Gen uint64
}

func (e *Engine) leaseOp(t *entityType, kind LeaseOpKind, s shard.ID) {
	e.out.Leases = append(e.out.Leases, LeaseOp{Kind: kind, Type: t.cfg.Name, Shard: s, Gen: t.gens[s]})
}

// LeaseAcquired answers LeaseAcquire. A lease acquired for a shard incarnation that is gone
// is released at once.
func (e *Engine) LeaseAcquired(now time.Time, typ string, s shard.ID, gen uint64, ok bool) {
	e.now = now
	t := e.types[typ]
	switch {
	case t != nil && t.gens[s] == gen && t.shards[s] != nil:
		t.shard(s).LeaseAcquired(now, ok)
	case ok:
		e.out.Leases = append(e.out.Leases, LeaseOp{Kind: LeaseRelease, Type: typ, Shard: s, Gen: gen})
	}
	e.settle()
}

// LeaseLost reports that a local shard lost its lease.
func (e *Engine) LeaseLost(now time.Time, typ string, s shard.ID, gen uint64) {
	e.now = now
	if t := e.types[typ]; t != nil && t.gens[s] == gen {
		if sh := t.shard(s); sh != nil {
			sh.LeaseLost(now)
		}
	}
	e.settle()
}

// ResolverLeaseResult answers the acquisition seq of the split-brain resolver's lease
// (Ready.ResolverLease): held reports whether this member holds it now.
func (e *Engine) ResolverLeaseResult(now time.Time, seq uint64, held bool) {
	e.now = now
	e.m.LeaseResult(now, seq, held)
	e.settle()
}
