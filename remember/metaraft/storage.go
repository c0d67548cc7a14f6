package metaraft

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Storage is where a member's part of the group is durable: the log, the HardState (term,
// vote, commit) and the last snapshot. raft reads it through raft.Storage; Save writes
// what a Ready hands out, and must be durable (fsynced) when it returns: the member sends
// nothing that depends on it before.
type Storage interface {
	raft.Storage
	// ID is this storage's replica id: drawn when the storage was made, never 0, the same
	// for as long as it holds the group's state. A member whose storage was lost comes back
	// as another replica (a new id the leader adds), never as one that forgot what it voted
	// for and what it acknowledged.
	ID() (uint64, error)
	// Save stores a snapshot (nil or empty: none), then entries (replacing the log from
	// the first one's index on), then the HardState (nil or empty: unchanged).
	Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error
	// CreateSnapshot keeps a snapshot of the state at applied index i (conf state cs, data
	// the applied records): raft's Snapshot returns it from then on.
	CreateSnapshot(i uint64, cs *pb.ConfState, data []byte) (*pb.Snapshot, error)
	// Compact drops the log up to index i, which a snapshot covers.
	Compact(i uint64) error
	// Reset forgets the group: the log, the HardState, the snapshot, and draws a new
	// replica id (a member the group removed; if it is added again, it is as a new
	// replica).
	Reset() error
}

// MemStorage keeps a member's part of the group in memory (tests and the simulation: it
// outlives the Member, as a disk outlives a process).
type MemStorage struct {
	*raft.MemoryStorage
	id uint64
}

// NewMemStorage returns an empty storage with a new replica id.
func NewMemStorage() *MemStorage {
	return &MemStorage{MemoryStorage: raft.NewMemoryStorage(), id: NewReplicaID()}
}

// ID implements Storage.
func (s *MemStorage) ID() (uint64, error) { return s.id, nil }

// Reset implements Storage.
func (s *MemStorage) Reset() error {
	s.MemoryStorage, s.id = raft.NewMemoryStorage(), NewReplicaID()
	return nil
}

// NewReplicaID draws a replica id (crypto/rand: tests make it deterministic with
// testing/cryptotest).
func NewReplicaID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// Save implements Storage.
func (s *MemStorage) Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error {
	if snap != nil && !raft.IsEmptySnap(snap) {
		if err := s.ApplySnapshot(snap); err != nil {
			return fmt.Errorf("metaraft: store snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
		}
	}
	if err := s.Append(ents); err != nil {
		return fmt.Errorf("metaraft: append %d entries: %w", len(ents), err)
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		if err := s.SetHardState(hs); err != nil {
			return fmt.Errorf("metaraft: store hard state: %w", err)
		}
	}
	return nil
}
