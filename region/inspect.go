package region

import (
	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/shard"
)

// LocalEpoch returns the epoch of a shard hosted here and whether it is stopping; false
// when the shard is not hosted here.
func (r *Region) LocalEpoch(s shard.ID) (epoch coordinator.Epoch, stopping, ok bool) {
	l := r.local[s]
	if l == nil {
		return 0, false, false
	}
	return l.epoch, l.stopping, true
}

// BufferedFor returns how many messages for shard s wait here for its home.
func (r *Region) BufferedFor(s shard.ID) int {
	if b := r.buffers[s]; b != nil {
		return len(b.envs)
	}
	return 0
}

// HandingOff returns the shards whose handoff this region acknowledged and buffers for (a
// copy).
func (r *Region) HandingOff() map[shard.ID]bool {
	out := make(map[shard.ID]bool, len(r.handingOff))
	for s := range r.handingOff {
		out[s] = true
	}
	return out
}
