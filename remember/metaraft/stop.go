package metaraft

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrStopped says the member stopped: its storage failed (a full or failing disk, a
// damaged record), or raft could not go on with what it read or received. A stopped
// member sends nothing, its ticks do nothing, and every call is answered with an error
// wrapping ErrStopped and the cause. The group carries on without it; restart it from its
// storage once the cause is mended (or remove it and let it rejoin empty).
var ErrStopped = errors.New("metaraft: the member stopped")

// Err returns why the member stopped (wrapping ErrStopped and the cause), or nil while it
// runs.
func (m *Member) Err() error { return m.err }

// stop stops the member for cause: the frames not yet handed out are dropped (nothing
// after the failure may go out), and every waiting call is answered with the error.
func (m *Member) stop(cause error) {
	if m.err != nil {
		return
	}
	m.err = fmt.Errorf("%w: %s: %w", ErrStopped, m.cfg.Self, cause)
	m.out.Sends = nil
	for _, id := range slices.Sorted(maps.Keys(m.calls)) {
		m.answer(Answer{Call: id, Err: m.err})
	}
	m.writes, m.reads, m.changes = map[uint64]uint64{}, nil, nil
}

// refused answers call c at once when the member has stopped.
func (m *Member) refused(c *call) bool {
	if m.err == nil {
		return false
	}
	m.answer(Answer{Call: c.id, Err: m.err})
	return true
}

// recovered stops the member when r, a recovered panic, is one: raft panics when its
// storage fails a read, or on a state it cannot take (a damaged log, a frame that
// contradicts it). Whatever raft held may be half changed, so nothing of it is used again.
func (m *Member) recovered(r any) bool {
	if r == nil {
		return false
	}
	err, ok := r.(error)
	if !ok {
		err = fmt.Errorf("%v", r)
	}
	m.stop(fmt.Errorf("raft failed: %w", err))
	return true
}
