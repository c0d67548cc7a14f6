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
