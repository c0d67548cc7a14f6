package metaraft

import (
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// A Ready whose entries do not fit one Badger transaction (15 % of the memtable: a
// follower far behind takes many appends of up to MaxSizePerMsg in one Ready, after a
// seed's large merges for instance) is saved in steps, each one synced transaction that
// leaves a state raft restarts from, so a crash between two loses nothing acknowledged:
//
//  1. the snapshot, if any, with the log it replaces deleted;
//  2. the log's conflicting suffix deleted from its end, each step a shorter log (those
//     entries were never committed: a leader's log holds every committed entry);
//  3. the entries, a transaction's worth at a time, each step a longer log.
//
// Each step stores the Ready's HardState with its commit index lowered to the log the step
// leaves (raft refuses to start from a commit index past the log, and the index is only
// ever learnt again, never lost: what a replica acknowledged is in its log); the last step
// stores it whole. Term and vote are stored from the first step on: a newer term stored
// early only makes the replica refuse an old leader sooner. Frames go out only once Save
// returns, as for one transaction.

// saveInSteps is Save in steps. It checks the Ready first, so that a Ready raft's
// MemoryStorage would refuse changes nothing.
func (s *BadgerStorage) saveInSteps(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error {
	hasSnap := snap != nil && !raft.IsEmptySnap(snap)
	log := s.log
	if hasSnap {
		md := snap.GetMetadata()
		if s.snap.md.GetIndex() != 0 && s.snap.md.GetIndex() >= md.GetIndex() {
			return fmt.Errorf("metaraft: store snapshot at %d: %w", md.GetIndex(), raft.ErrSnapOutOfDate)
		}
		log = logState{index: md.GetIndex(), term: md.GetTerm(), last: md.GetIndex()}
	}
	if len(ents) > 0 {
		at := ents[0].GetIndex()
		if at < log.index+1 {
			skip := min(uint64(len(ents)), log.index+1-at)
			ents = ents[skip:]
		}
	}
	if len(ents) > 0 {
		at := ents[0].GetIndex()
		if at > log.last+1 {
			return fmt.Errorf("metaraft: append %d entries at %d: the log ends at %d", len(ents), at, log.last)
		}
		for j, e := range ents {
			if e.GetIndex() != at+uint64(j) {
				return fmt.Errorf("metaraft: append entries at %d: entry %d has index %d", at, j, e.GetIndex())
			}
		}
	}
	var whole *pb.HardState
	if hs != nil && !raft.IsEmptyHardState(hs) {
		whole = proto.Clone(hs).(*pb.HardState)
	}
	// upTo is the HardState a step leaving the log at last stores (nil: none).
	upTo := func(last uint64) *pb.HardState {
		if whole == nil || whole.GetCommit() <= last {
			return whole
		}
		h := proto.Clone(whole).(*pb.HardState)
		h.Commit = new(last)
		return h
	}

	if hasSnap {
		md := snap.GetMetadata()
		w := s.begin()
		r := w.snapshot(pb.EnsureSnapshotMetadata(proto.Clone(md).(*pb.SnapshotMetadata)), snap.GetData())
		w.drop(w.log.index+1, w.log.last)
		w.log, w.lastTerm = log, md.GetTerm()
		if err := s.step(w, upTo(log.last)); err != nil {
			return err
		}
		s.keepSnapshot(r)
	}
	if len(ents) == 0 {
		if whole == nil {
			return nil
		}
		return s.step(s.begin(), whole)
	}
	at := ents[0].GetIndex()
	for s.log.last >= at {
		lo := s.log.last
		for n := 1; lo > at && n < s.stepBudget(); n++ {
			lo--
		}
		t, err := s.term(lo - 1)
		if err != nil {
			return err
		}
		w := s.begin()
		w.drop(lo, s.log.last)
		w.log.last, w.lastTerm = lo-1, t
		if err := s.step(w, upTo(lo-1)); err != nil {
			return err
		}
	}
	for len(ents) > 0 {
		n, size := 0, 0
		for n < len(ents) && n < s.stepBudget() {
			size += len(s.entryKey(0)) + proto.Size(ents[n]) + entryOverhead
			if n > 0 && int64(size) > s.db.MaxBatchSize()*3/4 {
				break
			}
			n++
		}
		w := s.begin()
		if err := w.append(ents[:n]); err != nil {
			return err
		}
		h := upTo(w.log.last)
		if n == len(ents) {
			h = whole // the last step: the HardState whole, as raft gave it
		}
		if err := s.step(w, h); err != nil {
			return err
		}
		ents = ents[n:]
	}
	return nil
}

// entryOverhead is what Badger counts for a key beside its key and value (meta bytes, the
// version), with room to spare.
const entryOverhead = 32

// stepBudget is how many keys a step of saveInSteps writes at most: three quarters of
// Badger's count limit, leaving room for the bounds and the HardState.
func (s *BadgerStorage) stepBudget() int {
	if s.stepKeys > 0 {
		return s.stepKeys
	}
	return int(max(1, s.db.MaxBatchCount()*3/4))
}

// step commits w, with hs when it is not nil, and takes the state it leaves.
func (s *BadgerStorage) step(w *write, hs *pb.HardState) error {
	defer w.txn.Discard()
	if hs != nil {
		w.put(s.key(recHardState), hs)
	}
	if err := w.commit(); err != nil {
		return err
	}
	s.log, s.lastTerm = w.log, w.lastTerm
	if hs != nil {
		s.hs = proto.Clone(hs).(*pb.HardState)
	}
	return nil
}
