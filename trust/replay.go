package trust

import (
	"errors"
	"fmt"
	"time"
)

// ErrReplayed is a signed request seen before, or issued too far from now.
var ErrReplayed = errors.New("request replayed or stale")

// maxNonces bounds the nonces a ReplayGuard remembers: admin requests are few, and only
// those an admin signed reach it.
const maxNonces = 1 << 16

// ReplayGuard refuses a signed request that was issued more than the window away from now
// (by the member's clock), or whose nonce it has seen within the window. Only requests
// that verified reach it, so an attacker cannot fill it. Not safe for concurrent use.
type ReplayGuard struct {
	window time.Duration
	seen   map[string]time.Time // nonce → when it may be forgotten
}

// NewReplayGuard returns a guard with window (DefaultSkew when 0).
func NewReplayGuard(window time.Duration) *ReplayGuard {
	if window <= 0 {
		window = DefaultSkew
	}
	return &ReplayGuard{window: window, seen: map[string]time.Time{}}
}

// Check records nonce and reports an error wrapping ErrReplayed when the request issued at
// issued must not be carried out at now.
func (g *ReplayGuard) Check(nonce []byte, issued, now time.Time) error {
	switch {
	case len(nonce) < 8:
		return fmt.Errorf("%w: the request has no nonce (is shardctl older than this member?)", ErrReplayed)
	case issued.Before(now.Add(-g.window)) || issued.After(now.Add(g.window)):
		return fmt.Errorf("%w: issued at %s, more than %v from this member's clock (%s): a replay, or a clock off",
			ErrReplayed, issued.UTC().Format(time.RFC3339), g.window, now.UTC().Format(time.RFC3339))
	}
	if _, dup := g.seen[string(nonce)]; dup {
		return fmt.Errorf("%w: this request was carried out already", ErrReplayed)
	}
	if len(g.seen) >= maxNonces {
		for n, until := range g.seen {
			if until.Before(now) {
				delete(g.seen, n)
			}
		}
		if len(g.seen) >= maxNonces {
			return fmt.Errorf("%w: more than %d admin requests within %v; try again later", ErrReplayed, maxNonces, 2*g.window)
		}
	}
	g.seen[string(nonce)] = issued.Add(g.window).Add(g.window)
	return nil
}
