package metaraft

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestMetaRaftStopsOnFullDisk fills the disk of the leader, then of a follower, of a
// 5-voter group that writes and reads all along (MemStorage and BadgerStorage): the
// member's next Save fails, and it stops: the write it was storing is answered with an
// error wrapping ErrStopped and the disk's, so are its other calls and every new one, it
// refuses frames and sends none, and its ticks do nothing. The others go on committing
// (a new leader when the leader stopped), and the race's checks hold after every event:
// no acknowledged write is lost. Freed, the disk's member restarts from its storage and
// catches up.
func TestMetaRaftStopsOnFullDisk(t *testing.T) {
	for _, kind := range []string{"memory", "badger"} {
		t.Run(kind, func(t *testing.T) {
			s := newSim(t, 3, Config{SnapshotEvery: 100, Timeout: 3 * time.Second})
			s.stopsOK = true
			if kind == "badger" {
				s.db = memDB(t)
			}
			answers := map[[2]uint64]Answer{}
			s.onAnswer = func(i int, a Answer) { answers[[2]uint64{uint64(i), a.Call}] = a }
			all := names(5)
			for i, name := range all {
				s.add(name, i == 0)
				s.nodes[i].view = all
			}
			for i := range s.nodes {
				s.every(100*time.Millisecond, 300*time.Millisecond, func() { s.write(i) })
				s.every(time.Second, 3*time.Second, func() { s.drive(i) })
				s.every(200*time.Millisecond, 600*time.Millisecond, func() {
					if len(s.acked) > 0 {
						s.read(i, s.acked[s.rng.IntN(len(s.acked))])
					}
				})
			}
			s.run(10 * time.Second)
			for _, role := range []string{"leader", "follower"} {
				// The leader, then the last follower.
				i := slices.IndexFunc(s.nodes, func(n *simNode) bool { lead, _ := n.m.IsLeader(); return lead })
				if role == "follower" {
					for i = len(s.nodes) - 1; ; i-- {
						if lead, _ := s.nodes[i].m.IsLeader(); !lead {
							break
						}
					}
				}
				n := s.nodes[i]
				pending := 0
				for k := range s.writes {
					if k[0] == uint64(i) {
						pending++
					}
				}
				n.st.failAt = n.st.saves + 1
				stopsBefore, refusedBefore := s.stops, s.refused
				call := n.m.Propose(s.now, encodeKV("full/"+role, []byte("x")))
				s.drain(i)
				a, ok := answers[[2]uint64{uint64(i), call}]
				if !ok || !errors.Is(a.Err, ErrStopped) || !errors.Is(a.Err, syscall.ENOSPC) {
					t.Fatalf("the %s %s: its write on a full disk is answered %+v (%v), want ErrStopped and ENOSPC", role, n.name, a, ok)
				}
				if err := n.m.Err(); !errors.Is(err, ErrStopped) || !errors.Is(err, syscall.ENOSPC) || s.stops != stopsBefore+1 {
					t.Fatalf("the %s %s: Err() = %v after its Save failed", role, n.name, err)
				}
				for k := range s.writes {
					if k[0] == uint64(i) {
						t.Fatalf("the %s %s stopped, but its write %d (of %d pending) is not answered", role, n.name, k[1], pending)
					}
				}
				t.Logf("the %s %s stopped: %v (%d writes pending answered)", role, n.name, n.m.Err(), pending)
				// New calls are answered at once; ticks do nothing.
				calls := []uint64{n.m.Propose(s.now, encodeKV("k", nil)), n.m.ReadIndex(s.now), n.m.ChangeVoters(s.now, s.voters(all))}
				rd := n.m.Ready()
				for j, c := range calls {
					if len(rd.Answers) != len(calls) || rd.Answers[j].Call != c || !errors.Is(rd.Answers[j].Err, ErrStopped) {
						t.Fatalf("the stopped %s answers %+v to calls %v", n.name, rd.Answers, calls)
					}
				}
				n.m.Tick(s.now.Add(time.Minute))
				if rd := n.m.Ready(); !rd.Empty() {
					t.Fatalf("the stopped %s ticks and hands out %+v", n.name, rd)
				}
				if lead, _ := n.m.Leader(); lead != "" {
					t.Fatalf("the stopped %s still names a leader, %s", n.name, lead)
				}

				acked := len(s.acked)
				s.run(10 * time.Second)
				if len(s.acked) < acked+50 || s.refused == refusedBefore {
					t.Fatalf("with the %s stopped, the group acknowledged %d writes in 10 s, and it refused %d frames", role, len(s.acked)-acked, s.refused-refusedBefore)
				}
				if n.m.Err() == nil {
					t.Fatalf("the %s %s runs again on a full disk", role, n.name)
				}
				t.Logf("with the %s stopped: %d writes acknowledged in 10 s, %d frames refused", role, len(s.acked)-acked, s.refused-refusedBefore)

				s.freeDisk(i)
				s.run(10 * time.Second)
				if n.m.Err() != nil {
					t.Fatalf("%s restarted on a free disk stopped again: %v", n.name, n.m.Err())
				}
				for _, w := range s.acked {
					if w.at.Before(s.now.Add(-5 * time.Second)) {
						if v, ok := n.kv.value(w.key); !ok || string(v) != w.value {
							t.Fatalf("restarted, %s holds %q = %q (%v), but %q was acknowledged", n.name, w.key, v, ok, w.value)
						}
					}
				}
			}
		})
	}
}

// soloMember founds a group of one on st and writes n keys.
func soloMember(t *testing.T, cfg Config, st Storage, n int) (*Member, time.Time) {
	t.Helper()
	now := time.Unix(1_700_000_000, 0)
	cfg.Self, cfg.Found = "solo", true
	m, err := New(cfg, st, newKV(nil), now)
	if err != nil {
		t.Fatal(err)
	}
	for now.Before(time.Unix(1_700_000_000, 0).Add(5 * time.Second)) {
		now = now.Add(100 * time.Millisecond)
		m.Tick(now)
	}
	if lead, _ := m.IsLeader(); !lead {
		t.Fatal("a group of one has no leader after 5 s")
	}
	for i := range n {
		m.Propose(now, encodeKV(fmt.Sprintf("k%d", i), []byte("v")))
	}
	for _, a := range m.Ready().Answers {
		if a.Err != nil {
			t.Fatalf("write: %v", a.Err)
		}
	}
	return m, now
}

// TestSnapshotFailuresLeaveTheMemberRunning: a snapshot or a compaction that fails (a full
// disk) only keeps the log longer: the member commits on, reports the cause
// (SnapshotErr), and takes one once it can.
func TestSnapshotFailuresLeaveTheMemberRunning(t *testing.T) {
	for _, name := range []string{"snapshot", "compact"} {
		t.Run(name, func(t *testing.T) {
			st := &trackedStorage{Storage: NewMemStorage()}
			m, now := soloMember(t, Config{SnapshotEvery: 10}, st, 5)
			st.failSnap, st.failCompact = name == "snapshot", name == "compact"
			for i := range 30 {
				m.Propose(now, encodeKV(fmt.Sprintf("x%d", i), []byte("v")))
			}
			for _, a := range m.Ready().Answers {
				if a.Err != nil {
					t.Fatalf("a write failed: %v", a.Err)
				}
			}
			if m.Err() != nil || !errors.Is(m.SnapshotErr(), syscall.ENOSPC) {
				t.Fatalf("Err() = %v, SnapshotErr() = %v", m.Err(), m.SnapshotErr())
			}
			st.failSnap, st.failCompact = false, false
			for i := range 10 {
				m.Propose(now, encodeKV(fmt.Sprintf("y%d", i), []byte("v")))
			}
			if m.SnapshotErr() != nil {
				t.Fatalf("no snapshot taken once the disk has room: %v", m.SnapshotErr())
			}
		})
	}
}

// TestMemberStopsOnStorageErrors: a Badger that closes under the member stops it with the
// cause; it never panics.
func TestMemberStopsOnStorageErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func(*trackedStorage, *badger.DB)
		cause error
	}{
		{"badger closed", func(_ *trackedStorage, db *badger.DB) { _ = db.Close() }, badger.ErrBlockedWrites},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := memDB(t)
			bs, err := OpenBadgerStorage(db, "")
			if err != nil {
				t.Fatal(err)
			}
			st := &trackedStorage{Storage: bs}
			m, now := soloMember(t, Config{SnapshotEvery: 10}, st, 5)
			tc.fail(st, db)
			var ids []uint64
			for i := range 10 {
				ids = append(ids, m.Propose(now, encodeKV(fmt.Sprintf("x%d", i), []byte("v"))))
			}
			if err := m.Err(); !errors.Is(err, ErrStopped) || !errors.Is(err, tc.cause) {
				t.Fatalf("Err() = %v, want ErrStopped and %v", err, tc.cause)
			}
			stopped := 0
			for _, a := range m.Ready().Answers {
				if errors.Is(a.Err, ErrStopped) {
					stopped++
				}
			}
			if stopped == 0 {
				t.Fatalf("no write of %v answered with ErrStopped", ids)
			}
			t.Logf("%v; %d of %d writes answered with it", m.Err(), stopped, len(ids))
		})
	}
}

// TestMemberStopsOnDamagedState: a log entry damaged on disk stops a restarting member
// (New fails with ErrStopped and ErrDamaged naming the key); a snapshot frame whose data
// does not decode is refused (and not stored); a leader's commit index past this member's
// log (it lost its log) stops it.
func TestMemberStopsOnDamagedState(t *testing.T) {
	t.Run("entry", func(t *testing.T) {
		db := memDB(t)
		bs, err := OpenBadgerStorage(db, "")
		if err != nil {
			t.Fatal(err)
		}
		_, now := soloMember(t, Config{}, bs, 20)
		if bs, err = OpenBadgerStorage(db, ""); err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set(bs.entryKey(7), []byte{0xff, 0xff}) }); err != nil {
			t.Fatal(err)
		}
		_, err = New(Config{Self: "solo"}, bs, newKV(nil), now)
		if !errors.Is(err, ErrStopped) || !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), fmt.Sprintf("%q", bs.entryKey(7))) {
			t.Fatalf("New on a damaged entry: %v, want ErrStopped and ErrDamaged naming the key", err)
		}
		t.Log(err)
	})
	frame := func(t *testing.T, msg *pb.Message) []byte {
		b, err := proto.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Run("snapshot frame", func(t *testing.T) {
		st := NewMemStorage()
		m, err := New(Config{Self: "b"}, st, newKV(nil), time.Unix(1_700_000_000, 0))
		if err != nil {
			t.Fatal(err)
		}
		err = m.Receive("a", frame(t, &pb.Message{Type: pb.MsgSnap.Enum(), From: new(uint64(0xa)), To: new(st.id), Term: new(uint64(5)),
			Snapshot: &pb.Snapshot{Data: []byte("not a snapshot"), Metadata: &pb.SnapshotMetadata{Index: new(uint64(10)), Term: new(uint64(5)),
				ConfState: &pb.ConfState{Voters: []uint64{0xa, st.id}}}}}))
		if err == nil || !strings.Contains(err.Error(), "damaged snapshot") || m.Err() != nil {
			t.Fatalf("a damaged snapshot: Receive = %v, Err() = %v, want the frame refused", err, m.Err())
		}
		if snap, _ := st.Snapshot(); snap.GetMetadata().GetIndex() != 0 {
			t.Fatalf("the damaged snapshot was stored: %v", snap.GetMetadata())
		}
		t.Log(err)
	})
	t.Run("commit past the log", func(t *testing.T) {
		// A leader that counts on entries this member does not have: its log was lost.
		st := NewMemStorage()
		m, err := New(Config{Self: "b"}, st, newKV(nil), time.Unix(1_700_000_000, 0))
		if err != nil {
			t.Fatal(err)
		}
		err = m.Receive("a", frame(t, &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(0xa)), To: new(st.id), Term: new(uint64(5)), Commit: new(uint64(100))}))
		if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "out of range") || !errors.Is(m.Err(), ErrStopped) {
			t.Fatalf("a commit past the log: Receive = %v, Err() = %v", err, m.Err())
		}
		if rd := m.Ready(); len(rd.Sends) > 0 {
			t.Fatalf("the stopped member sends %d frames", len(rd.Sends))
		}
		t.Log(err)
	})
}
