package region

import (
	"maps"
	"slices"
	"time"
)

// SetOutOfService takes the entity type out of service (`shardctl types stop`) or back: while
// out of service every message is refused with ErrTypeStopped, those buffered now included,
// so that senders fail fast instead of waiting for a home that will not come. Local shards
// keep running until the coordinator hands them off.
func (r *Region) SetOutOfService(now time.Time, out bool) {
	r.now = now
	if r.outOfService == out {
		return
	}
	r.outOfService = out
	if !out {
		return
	}
	for _, s := range slices.Sorted(maps.Keys(r.buffers)) {
		for _, env := range r.takeBuffer(s).envs {
			r.reject(env, ErrTypeStopped)
		}
	}
	r.checkShutdown() // a region shutting down may have waited only for those
}

// NoNewShards reports whether the coordinator acknowledged that this region takes no new
// shards now.
func (r *Region) NoNewShards() bool { return r.registered && r.ackedNoNew }

// SetNoNewShards tells the region whether its member can take new shards now (not while
// its store's disk is full): the region registers again with the flag, and the coordinator
// allocates no new shards here until it is cleared. Shards hosted here stay.
func (r *Region) SetNoNewShards(now time.Time, no bool) {
	r.now = now
	if r.noNewShards == no {
		return
	}
	r.noNewShards = no
	r.register()
}
