package config

import (
	"slices"

	"github.com/shardmesh/shardmesh/config/value"
)

// Store is the member's replica of the replicated store on its disk (not in reference.conf:
// shardmesh's own keys, store.*).
type Store struct {
	// MinFreeSpace is store.min-free-space: the bytes kept free on the store's file system.
	// Below it the store refuses writes (they fail with remember.ErrDiskFull, and the
	// member reports not ready) until space is back; 0 turns the reserve off. The reserve
	// also covers what the database writes on its own (flushes, compactions), which is
	// what a full disk would otherwise crash. Default 256 MiB.
	MinFreeSpace int64
	// RebuildDamaged is store.rebuild-damaged: a store found damaged at start is moved
	// aside (kept, as store.damaged-<time>) and the member starts with an empty one that it
	// refills from its peers, instead of exiting with code 1. Default off.
	RebuildDamaged bool
}

// DefaultMinFreeSpace is store.min-free-space's default: room for the database's own
// writes (two memtables flushed, a level-0 compaction, the next write-ahead log) with a
// margin.
const DefaultMinFreeSpace = 256 << 20

// DefaultStore returns the defaults.
func DefaultStore() Store { return Store{MinFreeSpace: DefaultMinFreeSpace} }

func init() {
	at := slices.IndexFunc(Schema, func(k Key) bool { return k.Path == "entity-types" }) + 1
	s := func(c *Config) *Store { return &c.Store }
	Schema = slices.Insert(Schema, at,
		Key{Path: "store.min-free-space", Usage: "free space kept on the store's file system; below it writes are refused and the member is not ready until space returns; 0 or off: no reserve (default 256MiB)",
			set: func(c *Config, raw any) error {
				n, err := value.Size("store.min-free-space", raw, "or off")
				if err == nil {
					s(c).MinFreeSpace = n
				}
				return err
			}},
		boolKey("store.rebuild-damaged", "a store found damaged at start is moved aside (kept) and refilled from the peers instead of exiting with code 1 (default off)",
			func(c *Config) *bool { return &s(c).RebuildDamaged }),
	)
}
