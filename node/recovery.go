package node

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// recoveryMeter measures what the adaptive recovery budget follows (shard.RecoveryBudget):
// every store round this member makes for remembered entities and durable state, and every
// start of a remembered entity, from the StartEntity operation to its behaviour created.
// Goroutines of the store calls and the entity workers add; the loop takes a sample every
// tick and feeds it to the engine.
type recoveryMeter struct {
	mu     sync.Mutex
	sample shard.RecoverySample

	// inFlight counts start signals of remembered entities queued and not yet handled.
	inFlight atomic.Int64

	// Totals since the member started, for StoreRounds.
	rounds, failures, timeouts atomic.Uint64
	storeNanos                 atomic.Int64
	starts                     atomic.Uint64
	startNanos                 atomic.Int64
}

// store records one store round that took d and ended with err.
func (m *recoveryMeter) store(d time.Duration, err error) {
	failed := err != nil && !errors.Is(err, remember.ErrFenced) && !errors.Is(err, context.Canceled)
	m.mu.Lock()
	m.sample.StoreOps++
	m.sample.StoreTime += d
	if failed {
		m.sample.StoreFailures++
	}
	m.mu.Unlock()
	m.rounds.Add(1)
	m.storeNanos.Add(int64(d))
	if failed {
		m.failures.Add(1)
		if errors.Is(err, remember.ErrNoQuorum) || errors.Is(err, context.DeadlineExceeded) {
			m.timeouts.Add(1)
		}
	}
}

// started records a remembered entity whose behaviour was created d after its StartEntity.
func (m *recoveryMeter) started(d time.Duration) {
	m.mu.Lock()
	m.sample.Starts++
	m.sample.StartTime += d
	m.mu.Unlock()
	m.starts.Add(1)
	m.startNanos.Add(int64(d))
}

// take returns what was measured since the last take.
func (m *recoveryMeter) take() shard.RecoverySample {
	m.mu.Lock()
	s := m.sample
	m.sample = shard.RecoverySample{}
	m.mu.Unlock()
	s.InFlight = int(max(m.inFlight.Load(), 0))
	return s
}

// timed runs a store call and records it.
func (m *recoveryMeter) timed(fn func() error) error {
	t := time.Now()
	err := fn()
	m.store(time.Since(t), err)
	return err
}

// StoreRounds counts this member's store rounds for remembered entities and durable state
// since it started.
type StoreRounds struct {
	Rounds uint64 // writes, reads and scans
	// Failures are rounds that failed (a fenced write excepted); Timeouts those of them that
	// ended for want of a quorum in time (remember.ErrNoQuorum) or by their caller's deadline.
	Failures, Timeouts uint64
	Time               time.Duration // summed over the rounds
	// RememberedStarts counts remembered entities started without a message, and StartTime
	// sums how long each took from the shard's decision to its behaviour created.
	RememberedStarts uint64
	StartTime        time.Duration
}

// StoreRounds returns what this member's store rounds and remembered entity starts took.
func (n *Node) StoreRounds() StoreRounds {
	m := &n.core.recovery
	return StoreRounds{
		Rounds: m.rounds.Load(), Failures: m.failures.Load(), Timeouts: m.timeouts.Load(), Time: time.Duration(m.storeNanos.Load()),
		RememberedStarts: m.starts.Load(), StartTime: time.Duration(m.startNanos.Load()),
	}
}

// RecoveryRate returns the current rate of the adaptive recovery budget of typ, in entity
// starts per second for the cluster, or 0 when typ does not recover adaptively.
func (n *Node) RecoveryRate(ctx context.Context, typ string) (float64, error) {
	return onLoop(ctx, n, func(_ time.Time, c *Core) (float64, error) {
		if b := c.eng.RecoveryBudget(typ); b != nil {
			return b.Rate(), nil
		}
		return 0, nil
	})
}
