package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/shard"
)

// errStore is what a failed store operation reports (no quorum, a timeout).
var errStore = errors.New("simulated store failure")

// store plays the replicated store of remembered entities as a majority of its replicas
// would hold it: it survives every crash. Operations complete after a random delay and fail
// with probability FailRate; a write that fails may still have been stored (as a real write
// that reached a quorum but timed out), and one whose member dies before the answer is kept.
type store struct {
	// FailRate is the probability that an operation reports a failure.
	FailRate float64
	entities map[string]map[shard.ID]map[shard.EntityID]bool // type → shard → remembered entities
	shards   map[string]map[shard.ID]bool                    // type → shards stored (StoreOp.NewShard)
}

func newStore() *store {
	return &store{entities: map[string]map[shard.ID]map[shard.EntityID]bool{}, shards: map[string]map[shard.ID]bool{}}
}

func (st *store) shard(typ string, s shard.ID) map[shard.EntityID]bool {
	byShard := st.entities[typ]
	if byShard == nil {
		byShard = map[shard.ID]map[shard.EntityID]bool{}
		st.entities[typ] = byShard
	}
	set := byShard[s]
	if set == nil {
		set = map[shard.EntityID]bool{}
		byShard[s] = set
	}
	return set
}

// remembered returns the remembered entities of type typ, sorted.
func (s *Sim) remembered(typ string) []entityKey {
	var out []entityKey
	for _, set := range s.store.entities[typ] {
		for id := range set {
			out = append(out, entityKey{typ, id})
		}
	}
	slices.SortFunc(out, func(a, b entityKey) int { return strings.Compare(string(a.entity), string(b.entity)) })
	return out
}

// storeOp carries out a store operation of node n and answers it after a random delay.
func (s *Sim) storeOp(n *Node, op engine.StoreOp) {
	inc := n.Incarnation
	delay := time.Millisecond + time.Duration(s.rng.Int64N(int64(20*time.Millisecond)))
	var err error
	if s.rng.Float64() < s.store.FailRate {
		err = errStore
	}
	stored := err == nil || s.rng.IntN(2) == 0
	s.schedule(delay, func() {
		switch op.Kind {
		case engine.StoreRemember:
			if stored {
				s.store.shard(op.Type, op.Shard)[op.Entity] = true
				if op.NewShard {
					if s.store.shards[op.Type] == nil {
						s.store.shards[op.Type] = map[shard.ID]bool{}
					}
					s.store.shards[op.Type][op.Shard] = true
				}
			}
		case engine.StoreForget:
			if stored {
				delete(s.store.shard(op.Type, op.Shard), op.Entity)
			}
		}
		if n.Alive && n.Incarnation == inc {
			n.recovery.StoreOps++
			n.recovery.StoreTime += delay
			if err != nil {
				n.recovery.StoreFailures++
			}
		}
		s.answerStore(n, inc, op, err)
	})
}

// answerStore feeds the answer of op to node n, unless n restarted meanwhile; a paused node
// gets it when it resumes.
func (s *Sim) answerStore(n *Node, inc uint64, op engine.StoreOp, err error) {
	if !n.Alive || n.Incarnation != inc {
		return
	}
	if n.Paused {
		n.held = append(n.held, func() { s.answerStore(n, inc, op, err) })
		return
	}
	switch op.Kind {
	case engine.StoreLoadEntities:
		var ids []shard.EntityID
		if err == nil {
			ids = slices.Sorted(maps.Keys(s.store.shard(op.Type, op.Shard)))
		}
		n.E.EntitiesLoaded(s.now, op.Type, op.Shard, op.Gen, ids, err)
	case engine.StoreRemember:
		n.E.EntitiesRemembered(s.now, op.Type, op.Shard, op.Gen, []shard.EntityID{op.Entity}, err)
	case engine.StoreLoadShards:
		var ids []shard.ID
		if err == nil {
			ids = slices.Sorted(maps.Keys(s.store.shards[op.Type]))
		}
		n.E.ShardsLoaded(s.now, op.Type, ids, err)
	case engine.StoreForget:
		return
	}
	s.process(n)
}

// checkRemembered: every remembered entity runs on exactly one running member (checked once
// the cluster has settled).
func (s *Sim) checkRemembered(typ string) error {
	for _, key := range s.remembered(typ) {
		var on []string
		for _, n := range s.nodes[1:] {
			if n.Running() && n.entities != nil && n.entities.live[key] != nil {
				on = append(on, string(n.ID))
			}
		}
		if len(on) != 1 {
			return fmt.Errorf("remembered entity %s runs on %d members %v", key, len(on), on)
		}
	}
	return nil
}
