package remember

import (
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/shardmesh/shardmesh/remember/metaraft"
)

// guardedStorage is a replica's storage of the metadata group behind the store's disk
// guard: every write to Badger (a Ready's, a snapshot, a compaction, a reset) is admitted
// by the guard first, as the store's own commits are — refused (a *DiskFullError) when it
// would leave less than the reserve, and never written into a write-ahead log the guard has
// not preallocated (on a full tmpfs Badger dies of SIGBUS writing into one that is not:
// TestFullTmpfsIsAnErrorNotACrash). The replica stops on a refusal, and the machine starts
// it again later (restartReplica).
type guardedStorage struct {
	*metaraft.BadgerStorage
	space *diskGuard
}

// recordOverheadBytes is what the guard counts for a write without a payload (a HardState,
// a compaction's deletions, a reset).
const recordOverheadBytes = 256

// Save implements metaraft.Storage.
func (s guardedStorage) Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error {
	n := 0
	for _, e := range ents {
		n += len(e.GetData()) + 32
	}
	if snap != nil && !raft.IsEmptySnap(snap) {
		n += len(snap.GetData())
	}
	switch {
	case n > 0:
		if err := s.space.admit(n + recordOverheadBytes); err != nil {
			return err
		}
	case hs != nil && !raft.IsEmptyHardState(hs):
		s.small()
	}
	return s.BadgerStorage.Save(hs, ents, snap)
}

// small has the guard see a small write of the group's own (a HardState, a compaction, a
// reset): the reserve is there for such writes, so it is made below it too, but only into
// write-ahead logs the guard preallocated.
func (s guardedStorage) small() { _ = s.space.admit(recordOverheadBytes) }

// CreateSnapshot implements metaraft.Storage.
func (s guardedStorage) CreateSnapshot(i uint64, cs *pb.ConfState, data []byte) (*pb.Snapshot, error) {
	if err := s.space.admit(len(data) + recordOverheadBytes); err != nil {
		return nil, err
	}
	return s.BadgerStorage.CreateSnapshot(i, cs, data)
}

// Compact implements metaraft.Storage.
func (s guardedStorage) Compact(i uint64) error {
	s.small()
	return s.BadgerStorage.Compact(i)
}

// Reset implements metaraft.Storage.
func (s guardedStorage) Reset() error {
	s.small()
	return s.BadgerStorage.Reset()
}
