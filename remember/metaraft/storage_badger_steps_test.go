package metaraft

import (
	"fmt"
	"testing"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestBadgerStorageSavesInSteps: a follower far behind gets a Ready of 3,000 entries (more
// keys than a Badger transaction of 1 MiB memtables takes), three of which replace the
// end of its log. Save stores it in steps (it failed with ErrTxnTooBig, and the member
// stopped), to the state raft's MemoryStorage reaches. Killed after each of its
// transactions in turn, the storage opens again to a state raft starts from: the old log
// cut short or the new one in part, a commit index within it and not below the old one,
// the Ready's term and vote; killed after the last, the whole new state.
func TestBadgerStorageSavesInSteps(t *testing.T) {
	db := crashDB(t)
	const oldCommit, n = 6, 3000
	setup := func(prefix string) *BadgerStorage {
		s, err := OpenBadgerStorage(db, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Save(&pb.HardState{Term: new(uint64(1)), Commit: new(uint64(oldCommit))}, logOf(1, 10, 1), nil); err != nil {
			t.Fatal(err)
		}
		return s
	}
	hs := &pb.HardState{Term: new(uint64(2)), Vote: new(uint64(3)), Commit: new(uint64(n))}
	write := func(s Storage) error { return s.Save(hs, logOf(8, n, 2), nil) }
	if int64(n) < db.MaxBatchCount() {
		t.Fatalf("a transaction takes %d keys: the Ready fits one", db.MaxBatchCount())
	}

	mem := NewMemStorage()
	for _, f := range []func(Storage) error{
		func(s Storage) error {
			return s.Save(&pb.HardState{Term: new(uint64(1)), Commit: new(uint64(oldCommit))}, logOf(1, 10, 1), nil)
		},
		write,
	} {
		if err := f(mem); err != nil {
			t.Fatal(err)
		}
	}
	s := setup("whole\x00")
	commits := 0
	s.afterCommit = func() { commits++ }
	if err := write(s); err != nil {
		t.Fatalf("save: %v", err)
	}
	s.afterCommit = nil
	want := storageState(t, mem)
	if got := storageState(t, s); !sameState(got, want) {
		t.Fatalf("saved in steps: %v, want %v", got[:5], want[:5])
	}
	again, err := OpenBadgerStorage(db, "whole\x00")
	if err != nil {
		t.Fatal(err)
	}
	if got := storageState(t, again); !sameState(got, want) {
		t.Fatal("reopened, not the state saved")
	}
	if commits < 3 {
		t.Fatalf("%d transactions: want a step deleting the suffix and two or more of entries", commits)
	}
	t.Logf("%d entries saved in %d transactions", n, commits)

	for k := 1; k <= commits; k++ {
		prefix := fmt.Sprintf("k%d\x00", k)
		s := setup(prefix)
		if killed, err := crashAfter(s, k, func() error { return write(s) }); !killed {
			t.Fatalf("k=%d: not killed (%v)", k, err)
		}
		again, err := OpenBadgerStorage(db, prefix)
		if err != nil {
			t.Fatalf("killed after %d of %d transactions: open: %v", k, commits, err)
		}
		got := storageState(t, again)
		h := got[0].(*pb.HardState)
		last := got[4].(uint64)
		ents := got[5].([]*pb.Entry)
		if h.GetTerm() != 2 || h.GetVote() != 3 || h.GetCommit() < oldCommit || h.GetCommit() > last || last < 7 {
			t.Fatalf("killed after %d of %d transactions: hard state %v, log 1..%d", k, commits, h, last)
		}
		for _, e := range ents {
			if wantTerm := map[bool]uint64{true: 1, false: 2}[e.GetIndex() < 8]; e.GetTerm() != wantTerm {
				t.Fatalf("killed after %d of %d transactions: entry %d of term %d, want %d", k, commits, e.GetIndex(), e.GetTerm(), wantTerm)
			}
		}
		if k == commits && !sameState(got, want) {
			t.Fatalf("killed after the last transaction: not the new state")
		}
		restarts(t, again, k)
	}
}

// restarts checks that raft starts from st (it panics on a commit index out of the log).
func restarts(t *testing.T, st Storage, k int) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("killed after %d transactions: raft does not start: %v", k, r)
		}
	}()
	if _, err := raft.NewRawNode(&raft.Config{ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: st,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, Logger: logger}); err != nil {
		t.Fatalf("killed after %d transactions: raft does not start: %v", k, err)
	}
}
