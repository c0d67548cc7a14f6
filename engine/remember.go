package engine

import (
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/region"
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
	// Epoch (StoreRemember): the shard's allocation epoch here, the starting incarnation's.
	Epoch uint64
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

// ObserveRecovery feeds what the runtime measured of the store and of remembered entity
// starts to every type's adaptive recovery budget (the store is one for all types).
func (e *Engine) ObserveRecovery(now time.Time, sample shard.RecoverySample) {
	e.now = now
	for _, n := range e.names {
		if t := e.types[n]; t.budget != nil {
			t.budget.Observe(sample)
		}
	}
}

// RecoveryBudget returns the adaptive recovery budget of typ, or nil (for inspection).
func (e *Engine) RecoveryBudget(typ string) *shard.RecoveryBudget {
	if t := e.types[typ]; t != nil {
		return t.budget
	}
	return nil
}

// grantRecovery hands the starts the type's budget allows now to the local shards that wait
// to start remembered entities, in equal shares (the shards in id order; what a shard does
// not use goes to the next ones).
func (e *Engine) grantRecovery(t *entityType, now time.Time) {
	want := 0
	var waiting []*shard.Shard[region.Envelope]
	for _, id := range t.order {
		sh := t.shards[id]
		if p := sh.RecoveryPending(); p > 0 {
			want += p
			waiting = append(waiting, sh)
		}
	}
	granted := t.budget.Take(now, want, e.recoveringMembers(t))
	for i, sh := range waiting {
		if granted <= 0 {
			break
		}
		share := (granted + len(waiting) - i - 1) / (len(waiting) - i) // ceil of an equal share of what is left
		granted -= sh.Recover(share)
		t.touched = append(t.touched, sh)
	}
}

// recoveringMembers is how many members share the cluster-wide recovery rate: the Up members
// with the type's role (after a full restart they all recover at once; this member counts
// even before it is Up).
func (e *Engine) recoveringMembers(t *entityType) int {
	n, self := 0, false
	for _, m := range e.synced.members { // Tick synced them first

		if m.Status != membership.Up || (t.cfg.Region.Role != "" && !slices.Contains(m.Roles, t.cfg.Region.Role)) {
			continue
		}
		n++
		self = self || m.Node == e.self.Node
	}
	if !self {
		n++
	}
	return n
}
