package remember

import (
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/shardmesh/shardmesh/remember/metaraft"
)

// guardedStorage is a replica's storage of the metadata group behind the store's disk
// guard: a Save that stores entries or a snapshot is refused (a *DiskFullError) when it
// would leave less than the reserve, as the store's own commits are. The replica stops on
// it, and the machine starts it again later (restartReplica).
type guardedStorage struct {
	*metaraft.BadgerStorage
	space *diskGuard
}

// Save implements metaraft.Storage.
func (s guardedStorage) Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error {
	n := 0
	for _, e := range ents {
		n += len(e.GetData()) + 32
	}
	if snap != nil && !raft.IsEmptySnap(snap) {
		n += len(snap.GetData())
	}
	if n > 0 {
		if err := s.space.admit(n); err != nil {
			return err
		}
	}
	return s.BadgerStorage.Save(hs, ents, snap)
}
