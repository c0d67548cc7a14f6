package engine

import (
	"time"

	"github.com/shardmesh/shardmesh/shard"
)

// StoreOpKind says what to do with the durable store of remembered entities.
type StoreOpKind uint8

// Store operations. The runtime answers the loads and remembers with EntitiesLoaded,
// EntitiesRemembered and ShardsLoaded; it may batch operations of one kind into one write.
const (
	StoreLoadEntities StoreOpKind = iota // read the remembered entities of Shard
	StoreRemember                        // store that Entity of Shard runs
	StoreForget                          // remove Entity of Shard (it passivated); no answer
	StoreLoadShards                      // read the shards of Type that hold remembered entities
)

func (k StoreOpKind) String() string {
	return [...]string{"load-entities", "remember", "forget", "load-shards"}[k]
}

// StoreOp is work for the store of remembered entities (types with remember-entities on).
type StoreOp struct {
	Kind   StoreOpKind
	Type   string
	Shard  shard.ID
	Entity shard.EntityID
	// Gen names the incarnation of the local shard that asked; answers carry it back, so an
	// answer meant for an earlier incarnation of the shard on this member is ignored.
	Gen uint64
	// NewShard (StoreRemember): the shard has nothing stored yet; store it too, for
	// StoreLoadShards.
	NewShard bool
}

func (e *Engine) storeOp(t *entityType, op StoreOp) {
	op.Type, op.Gen = t.cfg.Name, t.gens[op.Shard]
	e.out.Store = append(e.out.Store, op)
}

// EntitiesLoaded answers StoreLoadEntities.
func (e *Engine) EntitiesLoaded(now time.Time, typ string, s shard.ID, gen uint64, ids []shard.EntityID, err error) {
	e.now = now
	if t := e.types[typ]; t != nil && t.gens[s] == gen {
		if sh := t.shard(s); sh != nil {
			sh.Loaded(now, ids, err)
		}
	}
	e.settle()
}

// EntitiesRemembered answers StoreRemember for ids of shard s.
func (e *Engine) EntitiesRemembered(now time.Time, typ string, s shard.ID, gen uint64, ids []shard.EntityID, err error) {
	e.now = now
	if t := e.types[typ]; t != nil && t.gens[s] == gen {
		if sh := t.shard(s); sh != nil {
			sh.Remembered(now, ids, err)
		}
	}
	e.settle()
}

// ShardsLoaded answers StoreLoadShards (to the type's coordinator, if it still runs here).
func (e *Engine) ShardsLoaded(now time.Time, typ string, ids []shard.ID, err error) {
	e.now = now
	if t := e.types[typ]; t != nil && t.coord != nil {
		t.coord.ShardsLoaded(now, ids, err)
	}
	e.settle()
}
