package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// Store is what StoreProvider needs of the replicated store (remember.Store has it).
type Store interface {
	Get(ctx context.Context, key string) (remember.Record, bool, error)
	GetFenced(ctx context.Context, key string, epoch uint64) (remember.Record, bool, error)
	Write(ctx context.Context, ws ...remember.Write) error
}

// StoreConfig configures StoreProvider (sharding.store-lease.*).
type StoreConfig struct {
	// HeartbeatTimeout is how long a lease lasts without renewal. Default 20 s.
	HeartbeatTimeout time.Duration
	// HeartbeatInterval is how often the holder renews it. Default 2 s; at most a third of
	// HeartbeatTimeout.
	HeartbeatInterval time.Duration
}

func (c StoreConfig) withDefaults() StoreConfig {
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 20 * time.Second
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 2 * time.Second
	}
	c.HeartbeatInterval = min(c.HeartbeatInterval, c.HeartbeatTimeout/3)
	return c
}

// StoreProvider keeps leases in the replicated store, under ls␀NAME: the owner and when the
// lease expires (wall clock; members' clocks must agree to well within HeartbeatTimeout).
//
// Taking a lease is one round of a fenced register. The taker picks a fencing epoch above
// any it has seen ((generation+1)<<24 | 24 bits of its owner name), raises the key's fence
// floor to it with a majority read (GetFenced), and, if the lease is free or expired there,
// writes itself as the owner with that epoch to a majority. Two takers at once cannot both
// succeed: whichever raised its floor on a majority later with the higher epoch makes the
// other's write fail its quorum (the two quorums share a replica), and a taker whose read
// came after the other's write sees the lease held. The holder renews with its epoch every
// HeartbeatInterval and counts the lease as held until HeartbeatTimeout after the last
// renewal it started that succeeded, less one interval of margin; a renewal refused by the
// fence (another owner took it) or none succeeding in time loses it.
type StoreProvider struct {
	store Store
	cfg   StoreConfig
}

// NewStoreProvider returns leases kept in store.
func NewStoreProvider(store Store, cfg StoreConfig) *StoreProvider {
	return &StoreProvider{store: store, cfg: cfg.withDefaults()}
}

// Lease returns the lease called name for owner.
func (p *StoreProvider) Lease(name, owner string) Lease {
	return &storeLease{p: p, key: datadir.Key(datadir.FamilyLease, name), name: name, owner: owner, salt: xxhash.Sum64String(owner) & (1<<24 - 1)}
}

// record is a lease's value in the store.
type record struct {
	Owner     string `json:"owner"`
	ExpiresMs int64  `json:"expires_ms"`
}

type storeLease struct {
	p     *StoreProvider
	key   string
	name  string
	owner string
	salt  uint64

	mu       sync.Mutex
	held     bool
	epoch    uint64
	deadline time.Time // held until (monotonic)
	stop     chan struct{}
}

// heldByOther reports whether rec names another owner whose lease has not expired.
func (l *storeLease) heldByOther(rec remember.Record, found bool, now time.Time) (bool, error) {
	if !found {
		return false, nil
	}
	var r record
	if err := json.Unmarshal(rec.Value, &r); err != nil {
		return false, fmt.Errorf("lease %s: unreadable record: %w", l.name, err)
	}
	return r.Owner != l.owner && now.UnixMilli() < r.ExpiresMs, nil
}

func (l *storeLease) Acquire(ctx context.Context, lost func(error)) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held && time.Now().Before(l.deadline) {
		return true, nil
	}
	rec, found, err := l.p.store.Get(ctx, l.key)
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", l.name, err)
	}
	if other, err := l.heldByOther(rec, found, time.Now()); other || err != nil {
		return false, err
	}
	seen := max(rec.Version.Epoch, l.epoch)
	// A fence floor above every epoch seen (a reader that never wrote) refuses the write,
	// naming the epoch it needs: one more round above it.
	for range 3 {
		epoch := (seen>>24+1)<<24 | l.salt
		rec, found, err = l.p.store.GetFenced(ctx, l.key, epoch)
		if err != nil {
			return false, fmt.Errorf("lease %s: %w", l.name, err)
		}
		if other, err := l.heldByOther(rec, found, time.Now()); other || err != nil {
			return false, err
		}
		start := time.Now()
		err := l.write(ctx, epoch, start)
		var fenced *remember.FencedError
		switch {
		case err == nil:
			l.held, l.epoch, l.deadline = true, epoch, l.until(start)
			l.stop = make(chan struct{})
			go l.renew(l.stop, epoch, lost)
			return true, nil
		case errors.As(err, &fenced):
			seen = max(seen, fenced.Need, epoch) // another owner is taking it, or a stale floor
		default:
			return false, fmt.Errorf("lease %s: %w", l.name, err)
		}
	}
	l.epoch = seen
	return false, nil
}

// until is how long a renewal started at start keeps the lease.
func (l *storeLease) until(start time.Time) time.Time {
	return start.Add(l.p.cfg.HeartbeatTimeout - l.p.cfg.HeartbeatInterval)
}

func (l *storeLease) write(ctx context.Context, epoch uint64, start time.Time) error {
	v, _ := json.Marshal(record{Owner: l.owner, ExpiresMs: start.Add(l.p.cfg.HeartbeatTimeout).UnixMilli()})
	return l.p.store.Write(ctx, remember.Write{Key: l.key, Value: v, Epoch: epoch})
}

// refence takes a higher epoch than need for a lease this owner holds: a taker that found the
// lease held leaves the fence floor raised, which would refuse the holder's next write. It
// fails (false) if the lease is no longer this owner's.
func (l *storeLease) refence(ctx context.Context, need uint64) (uint64, bool, error) {
	epoch := (need>>24+1)<<24 | l.salt
	rec, found, err := l.p.store.GetFenced(ctx, l.key, epoch)
	if err != nil {
		return 0, false, err
	}
	var r record
	if !found || json.Unmarshal(rec.Value, &r) != nil || r.Owner != l.owner {
		return 0, false, nil
	}
	return epoch, true, nil
}

// writeHeld writes the holder's record (renewal) or tombstone (release) with its epoch,
// taking a higher one when a taker's fence is in the way; it returns the epoch used.
func (l *storeLease) writeHeld(ctx context.Context, epoch uint64, del bool, start time.Time) (uint64, error) {
	for range 3 {
		w := remember.Write{Key: l.key, Delete: del, Epoch: epoch}
		if !del {
			w.Value, _ = json.Marshal(record{Owner: l.owner, ExpiresMs: start.Add(l.p.cfg.HeartbeatTimeout).UnixMilli()})
		}
		err := l.p.store.Write(ctx, w)
		var fenced *remember.FencedError
		if !errors.As(err, &fenced) {
			return epoch, err
		}
		next, mine, err := l.refence(ctx, max(fenced.Need, epoch))
		if err != nil {
			return epoch, err
		}
		if !mine {
			return epoch, fenced // another owner holds it now
		}
		epoch = next
	}
	return epoch, fmt.Errorf("lease %s: the fence kept moving", l.name)
}

// renew keeps the lease until stop is closed, or reports it lost.
func (l *storeLease) renew(stop chan struct{}, epoch uint64, lost func(error)) {
	t := time.NewTicker(l.p.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		deadline := l.deadline
		l.mu.Unlock()
		start := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		used, err := l.writeHeld(ctx, epoch, false, start)
		cancel()
		l.mu.Lock()
		if l.stop != stop { // released meanwhile
			l.mu.Unlock()
			return
		}
		switch {
		case err == nil:
			epoch = used
			l.epoch, l.deadline = used, l.until(start)
			l.mu.Unlock()
			continue
		case !errors.Is(err, remember.ErrFenced) && time.Now().Before(l.deadline):
			l.mu.Unlock()
			continue // try again on the next tick
		}
		l.held, l.stop = false, nil
		l.mu.Unlock()
		if lost != nil {
			lost(fmt.Errorf("lease %s lost: %w", l.name, err))
		}
		return
	}
}

func (l *storeLease) Release(ctx context.Context) error {
	l.mu.Lock()
	held, epoch := l.held, l.epoch
	if l.stop != nil {
		close(l.stop)
		l.stop = nil
	}
	l.held = false
	l.mu.Unlock()
	if !held {
		return nil
	}
	_, err := l.writeHeld(ctx, epoch, true, time.Now())
	if errors.Is(err, remember.ErrFenced) {
		return nil // another owner holds it already
	}
	return err
}

func (l *storeLease) CheckLease() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && time.Now().Before(l.deadline)
}
