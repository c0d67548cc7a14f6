package passivation

import "time"

// IdleTracker passivates entities that have received no message for a timeout: the
// `default-idle-strategy` on its own. Every [Policy] with an idle timeout embeds the same
// bookkeeping (an overall recency list with the time of each entity's last message); this
// type is the narrow interface for callers that need nothing else.
type IdleTracker[K comparable] struct {
	p *Policy[K]
}

// NewIdleTracker returns a tracker that reports entities idle for longer than timeout;
// call Sweep every interval (0 means timeout/2, as `idle-entity.interval = default`).
func NewIdleTracker[K comparable](timeout, interval time.Duration) (*IdleTracker[K], error) {
	s := Settings{Strategy: "idle", Idle: IdleSettings{Timeout: timeout, Interval: interval}}
	if timeout <= 0 {
		return nil, &ConfigError{Path: "passivation.idle.idle-entity.timeout", Value: timeout, Reason: "must be a positive duration"}
	}
	p, err := NewPolicy[K](s, nil)
	if err != nil {
		return nil, err
	}
	return &IdleTracker[K]{p: p}, nil
}

// Touch records a message to entity id at time now.
func (t *IdleTracker[K]) Touch(id K, now time.Time) { t.p.Access(id, now, nil) }

// Remove forgets entity id.
func (t *IdleTracker[K]) Remove(id K) { t.p.Remove(id) }

// Sweep appends to out the entities idle for longer than the timeout at time now, least
// recently active first, and forgets them.
func (t *IdleTracker[K]) Sweep(now time.Time, out []K) []K { return t.p.Sweep(now, out) }

// Len returns the number of tracked entities.
func (t *IdleTracker[K]) Len() int { return t.p.Len() }

// Interval returns how often Sweep should run.
func (t *IdleTracker[K]) Interval() time.Duration { return t.p.interval }
