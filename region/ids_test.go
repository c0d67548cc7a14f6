package region

import "github.com/shardmesh/shardmesh/shard"

func shardID(s string) shard.ID        { return shard.ID(s) }
func entityID(s string) shard.EntityID { return shard.EntityID(s) }
