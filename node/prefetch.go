package node

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/shardmesh/shardmesh/remember"
)

// Durable starts (issue 23). An entity of a type that remembers its entities starts on its
// first message in two store rounds one after the other: the shard remembers it (a write),
// then the new incarnation loads its state (a fenced read, which raises the key's floor on
// disk). When the shard asks to remember a starting entity of a type whose entities load
// their state, the fenced read of that state is started at once, beside the write: both
// rounds are in flight together, their disk work goes into the same commits, and the
// incarnation takes the answer when it loads. It is the same fenced read the incarnation
// would make — same key, same epoch — made earlier: writes of the key with that epoch or
// later come only from this member's incarnations of the entity in this allocation, and a
// save invalidates what was read before it, so the answer holds every write acknowledged
// before the incarnation loads. A prefetch whose incarnation does not take it (a start that
// failed, a type that loads only later) is dropped after prefetchTTL.

// StatePrefetch names a starting entity's state for an early fenced read.
type StatePrefetch struct {
	Type  string
	Key   string // StateKey
	Epoch uint64 // the shard's allocation epoch here: the incarnation's
}

// prefetchTTL bounds how long a prefetched state waits for its incarnation, and
// maxPrefetches how many wait at once (past it, incarnations read for themselves).
const (
	prefetchTTL   = 30 * time.Second
	maxPrefetches = 1 << 16
)

// errPrefetchFailed is the answer of an early read that did not finish.
var errPrefetchFailed = errors.New("state prefetch failed")

// prefetchedState is one early fenced read of an entity's state.
type prefetchedState struct {
	epoch  uint64
	issued time.Time
	done   chan struct{} // closed when rec, found and err are set
	rec    remember.Record
	found  bool
	err    error
}

// statePrefetches holds the early reads by state key, and which types load their state.
type statePrefetches struct {
	mu        sync.Mutex
	byKey     map[string]*prefetchedState
	loadTypes map[string]bool // types an incarnation of which loaded its state
	lastSweep time.Time
}

// markLoads records that typ's incarnations load their state: its starts are prefetched
// from now on.
func (p *statePrefetches) markLoads(typ string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loadTypes[typ] {
		if p.loadTypes == nil {
			p.loadTypes = map[string]bool{}
		}
		p.loadTypes[typ] = true
	}
}

// start begins the reads of want that are of types that load their state, with read.
func (p *statePrefetches) start(now time.Time, want []StatePrefetch, read func(key string, epoch uint64) (remember.Record, bool, error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.lastSweep) > prefetchTTL {
		p.sweep(now)
	}
	for _, w := range want {
		if !p.loadTypes[w.Type] || len(p.byKey) >= maxPrefetches {
			continue
		}
		if p.byKey == nil {
			p.byKey = map[string]*prefetchedState{}
		}
		ps := &prefetchedState{epoch: w.Epoch, issued: now, done: make(chan struct{})}
		p.byKey[w.Key] = ps
		go func() {
			defer close(ps.done)
			ps.err = errPrefetchFailed
			ps.rec, ps.found, ps.err = read(w.Key, w.Epoch)
		}()
	}
}

// take returns the read of key made for an incarnation of epoch, and forgets it; nil when
// there is none.
func (p *statePrefetches) take(key string, epoch uint64) *prefetchedState {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.byKey[key]
	if ps == nil {
		return nil
	}
	delete(p.byKey, key)
	if ps.epoch != epoch {
		return nil
	}
	return ps
}

// invalidate forgets the read of key: a save of it comes after.
func (p *statePrefetches) invalidate(key string) {
	p.mu.Lock()
	delete(p.byKey, key)
	p.mu.Unlock()
}

// invalidatePrefix forgets the reads of every key under prefix: removed data.
func (p *statePrefetches) invalidatePrefix(prefix string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.byKey {
		if strings.HasPrefix(k, prefix) {
			delete(p.byKey, k)
		}
	}
}

// sweep drops the reads no incarnation took within prefetchTTL (p.mu held).
func (p *statePrefetches) sweep(now time.Time) {
	p.lastSweep = now
	for k, ps := range p.byKey {
		if now.Sub(ps.issued) > prefetchTTL {
			delete(p.byKey, k)
		}
	}
}

// wait waits for the read; false when ctx ends first.
func (ps *prefetchedState) wait(ctx context.Context) bool {
	select {
	case <-ps.done:
		return true
	case <-ctx.Done():
		return false
	}
}
