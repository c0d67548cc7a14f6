package node

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/shardmesh/shardmesh/remember"
)

// Storage faults at the member's edge (docs/storage.md): the store's disk filling up
// reaches the engine (no new shards here) and readiness; a damaged store stops the start,
// or with StoreConfig.RebuildDamaged is moved aside and refilled; a store that broke, or a
// panic in a goroutine that works with it, stops the member with a failure (the daemon
// exits 1) instead of the runtime's crash.

// StoreHealth is the member's store as readiness and the dashboard see it.
type StoreHealth struct {
	Dir    string
	Space  remember.Space       // its file system: free space, the reserve, whether writes are refused
	Refill remember.RefillState // whether it refills from its peers (its answers not counting in reads)
}

// StoreHealth returns the state of the member's store.
func (n *Node) StoreHealth() StoreHealth {
	return StoreHealth{Dir: n.dir.Store(), Space: n.store.Space(), Refill: n.store.Refill()}
}

// noteStoreSpace tells the core when the store's disk fills up or has room again: its
// regions then take no new shards, or take them again (loop goroutine, every tick).
func (n *Node) noteStoreSpace(now time.Time) {
	if full := n.store.Space().Full; full != n.storeFull {
		n.storeFull = full
		n.core.Step(now, StoreSpace{Full: full})
	}
}

// storeOpenError explains a store that does not open: for a damaged one, the fix.
func (n *Node) storeOpenError(err error) error {
	if errors.Is(err, remember.ErrDamaged) {
		return fmt.Errorf("%w; the other members hold its data: run 'shardctl data rebuild --data-dir %s' (it moves the store aside, kept) and start the member again to refill it from them, or set store.rebuild-damaged=on",
			err, n.dir.Path())
	}
	return fmt.Errorf("open the store in %s: %w", n.dir.Store(), err)
}

// openStoreRebuilding opens the store, and with StoreConfig.RebuildDamaged moves a damaged
// one aside first and opens an empty one to refill from the peers.
func (n *Node) openStoreRebuilding(open func() (*remember.Store, error)) (*remember.Store, error) {
	st, err := open()
	var dmg *remember.DamageError
	if !errors.As(err, &dmg) || !n.cfg.Store.RebuildDamaged {
		return st, err
	}
	why := fmt.Sprintf("rebuilt at start (store.rebuild-damaged) at %s: damaged %s: %s", time.Now().UTC().Format(time.RFC3339), dmg.Files[0].File, dmg.Files[0].Problem)
	aside, merr := n.dir.MoveStoreAside(why, time.Now())
	if merr != nil {
		return nil, fmt.Errorf("%w; and moving it aside failed: %w", err, merr)
	}
	n.log.Warn("the store is damaged: moved it aside (kept) to refill an empty one from the peers (store.rebuild-damaged)",
		"damaged", dmg.Error(), "moved_to", aside)
	return open()
}

// fail stops the member because it cannot go on — its store broke — as a crash would, but
// with the reason kept for Failure (the daemon exits 1).
func (n *Node) fail(err error) {
	if n.failure.CompareAndSwap(nil, &err) {
		n.log.Error("the member fails and stops", "err", err)
	}
	n.stop(nil)
}

// Failure returns why the member failed, or nil.
func (n *Node) Failure() error {
	if err := n.failure.Load(); err != nil {
		return *err
	}
	return nil
}

// caught turns a panic in a goroutine of the member that works with its store into the
// member failing, rather than the runtime's crash (exit code 2). Call it deferred, at the
// top of the goroutine.
func (n *Node) caught(where string) {
	r := recover()
	if r == nil {
		return
	}
	n.log.Error("panic", "in", where, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	n.fail(fmt.Errorf("%s panicked: %v", where, r))
}
