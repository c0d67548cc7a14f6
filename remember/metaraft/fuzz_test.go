package metaraft

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// frame is a frame a member of miniGroup received.
type frame struct {
	from, to string
	b        []byte
}

// miniGroup runs a group on a perfect network, in lockstep (no simulation: fuzz targets
// have no *testing.T): m0 founds it and writes, m1 joins after a compaction (so it gets a
// snapshot), m2 after more writes; all write and read. It returns the members, their
// storages and every frame delivered.
func miniGroup() (map[string]*Member, map[string]*MemStorage, []frame, error) {
	now := time.Unix(1_700_000_000, 0)
	cfg := Config{SnapshotEvery: 10, Timeout: time.Hour}
	members, stores := map[string]*Member{}, map[string]*MemStorage{}
	var frames []frame
	for i, name := range names(3) {
		c := cfg
		c.Self, c.Found = name, i == 0
		stores[name] = NewMemStorage()
		m, err := New(c, stores[name], newKV(nil), now)
		if err != nil {
			return nil, nil, nil, err
		}
		members[name] = m
	}
	settle := func() error {
		for range 1000 {
			moved := false
			for _, name := range names(3) {
				m := members[name]
				for _, s := range m.Ready().Sends {
					moved = true
					frames = append(frames, frame{from: name, to: s.To, b: s.Frame})
					if err := members[s.To].Receive(name, s.Frame); err != nil {
						return err
					}
				}
			}
			if !moved {
				return nil
			}
		}
		return errors.New("the group does not settle")
	}
	step := func(d time.Duration) error {
		for end := now.Add(d); now.Before(end); {
			now = now.Add(100 * time.Millisecond)
			for _, m := range members {
				m.Tick(now)
			}
			if err := settle(); err != nil {
				return err
			}
		}
		return nil
	}
	write := func(by string, n int) error {
		for i := range n {
			members[by].Propose(now, encodeKV(fmt.Sprintf("k/%s/%d", by, i), []byte(fmt.Sprintf("v%d", i))))
			members[by].ReadIndex(now)
		}
		return step(time.Second)
	}
	steps := []func() error{
		func() error { return step(3 * time.Second) },
		func() error { return write("m0", 25) },
		func() error {
			members["m0"].ChangeVoters(now, storeVoters(stores, names(2)))
			return step(3 * time.Second)
		},
		func() error { return write("m1", 5) },
		func() error {
			members["m0"].ChangeVoters(now, storeVoters(stores, names(3)))
			return step(3 * time.Second)
		},
		func() error { return write("m2", 5) },
		func() error { return write("m1", 5) },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, nil, nil, err
		}
	}
	return members, stores, frames, nil
}

// storeVoters names the replicas of members ns by their storages' ids.
func storeVoters(stores map[string]*MemStorage, ns []string) []Voter {
	out := make([]Voter, len(ns))
	for i, n := range ns {
		out[i] = Voter{Name: n, ID: stores[n].id}
	}
	return out
}

// copyStorage returns a MemStorage holding what st holds, with its id.
func copyStorage(st *MemStorage) *MemStorage {
	out := NewMemStorage()
	out.id = st.id
	snap, _ := st.Snapshot()
	first, _ := st.FirstIndex()
	last, _ := st.LastIndex()
	ents, _ := st.Entries(first, last+1, 1<<62)
	hs, _, _ := st.InitialState()
	if err := out.Save(hs, ents, snap); err != nil {
		panic(err) // a copy of a storage always saves
	}
	return out
}

// FuzzReceive gives a member of a running group (the leader m0 or the follower m1, as
// miniGroup leaves them) any frame from any peer (m0, m1, m2 or a stranger): Receive never
// panics; a frame that does not decode, or names another sender or receiver, is an error;
// a frame raft cannot take (say, a commit index past the log) stops the member (an error
// wrapping ErrStopped). The corpus is the group's real frames.
func FuzzReceive(f *testing.F) {
	members, stores, frames, err := miniGroup()
	if err != nil {
		f.Fatal(err)
	}
	peers := append(names(3), "stranger")
	seen := map[string]bool{}
	for _, fr := range frames {
		if fr.to != "m0" && fr.to != "m1" {
			continue
		}
		msg := &pb.Message{}
		if err := proto.Unmarshal(fr.b, msg); err != nil {
			f.Fatal(err)
		}
		kind := fmt.Sprint(fr.from, fr.to, msg.GetType(), len(msg.GetEntries()) > 0, msg.GetReject())
		if !seen[kind] {
			seen[kind] = true
			f.Add(fr.to == "m1", uint8(slices.Index(peers, fr.from)), fr.b)
		}
	}
	f.Add(true, uint8(0), []byte{0xff})
	now := time.Unix(1_700_000_000, 0).Add(time.Hour)
	f.Fuzz(func(t *testing.T, follower bool, peer uint8, b []byte) {
		self, from := "m0", peers[int(peer)%len(peers)]
		if follower {
			self = "m1"
		}
		m, err := New(Config{Self: self, SnapshotEvery: 10, Timeout: time.Hour}, copyStorage(stores[self]), newKV(nil), now)
		if err != nil {
			t.Fatal(err)
		}
		m.names = maps.Clone(members[self].names)
		err = m.Receive(from, b)
		if proto.Unmarshal(b, &pb.Message{}) != nil && err == nil {
			t.Fatal("a frame that does not decode is taken")
		}
		if (m.Err() != nil) != errors.Is(err, ErrStopped) {
			t.Fatalf("Receive = %v, but Err() = %v", err, m.Err())
		}
		m.Tick(now.Add(time.Second))
		m.Ready()
	})
}

// FuzzReceiveMessage is FuzzReceive on frames built from fuzzed fields (a type, terms,
// indexes, a commit, entries, a snapshot) that name the right sender and receiver, so that
// raft itself takes them: it never panics through Receive; a message raft cannot take
// (a commit past the log, a snapshot it cannot restore) stops the member with an error
// wrapping ErrStopped. The corpus is the group's real messages.
func FuzzReceiveMessage(f *testing.F) {
	members, stores, frames, err := miniGroup()
	if err != nil {
		f.Fatal(err)
	}
	seen := map[string]bool{}
	for _, fr := range frames {
		if fr.to != "m0" && fr.to != "m1" {
			continue
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(fr.b, m); err != nil {
			f.Fatal(err)
		}
		kind := fmt.Sprint(fr.from, fr.to, m.GetType(), len(m.GetEntries()) > 0, m.GetReject())
		if !seen[kind] {
			seen[kind] = true
			var data []byte
			if len(m.GetEntries()) > 0 {
				data = m.GetEntries()[0].GetData()
			}
			f.Add(fr.to == "m1", uint8(fr.from[1]-'0'), uint8(m.GetType()), m.GetTerm(), m.GetLogTerm(), m.GetIndex(), m.GetCommit(), m.GetReject(),
				uint8(len(m.GetEntries())), m.GetSnapshot().GetMetadata().GetIndex(), data)
		}
	}
	now := time.Unix(1_700_000_000, 0).Add(time.Hour)
	f.Fuzz(func(t *testing.T, follower bool, peer, typ uint8, term, logTerm, index, commit uint64, reject bool, nents uint8, snapIndex uint64, data []byte) {
		self, from := "m0", names(3)[int(peer)%3]
		if follower {
			self = "m1"
		}
		msg := &pb.Message{Type: pb.MessageType(int32(typ) % 25).Enum(), From: new(stores[from].id), To: new(stores[self].id), Term: new(term),
			LogTerm: new(logTerm), Index: new(index), Commit: new(commit), Reject: new(reject)}
		for i := range uint64(nents % 8) {
			msg.Entries = append(msg.Entries, &pb.Entry{Index: new(index + 1 + i), Term: new(term), Data: data})
		}
		if snapIndex > 0 {
			msg.Snapshot = &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{Index: new(snapIndex), Term: new(logTerm),
				ConfState: &pb.ConfState{Voters: []uint64{stores["m0"].id, stores[self].id}}}}
		}
		b, err := proto.Marshal(msg)
		if err != nil {
			t.Skip()
		}
		m, err := New(Config{Self: self, SnapshotEvery: 10, Timeout: time.Hour}, copyStorage(stores[self]), newKV(nil), now)
		if err != nil {
			t.Fatal(err)
		}
		m.names = maps.Clone(members[self].names)
		err = m.Receive(from, b)
		if (m.Err() != nil) != errors.Is(err, ErrStopped) {
			t.Fatalf("Receive = %v, but Err() = %v", err, m.Err())
		}
		m.Tick(now.Add(time.Second))
		m.Ready()
	})
}

// FuzzDecodeProposal: decodeProposal never panics, and what it decodes encodes back to a
// payload that decodes the same. The corpus is real payloads.
func FuzzDecodeProposal(f *testing.F) {
	_, _, frames, err := miniGroup()
	if err != nil {
		f.Fatal(err)
	}
	n := 0
	for _, fr := range frames {
		msg := &pb.Message{}
		if err := proto.Unmarshal(fr.b, msg); err != nil {
			f.Fatal(err)
		}
		for _, e := range msg.GetEntries() {
			if e.GetType() == pb.EntryNormal && len(e.GetData()) > 0 && n < 20 {
				f.Add(e.GetData())
				n++
			}
		}
	}
	f.Add((&proposal{}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeProposal(b)
		if err != nil {
			if !errors.Is(err, errProposal) {
				t.Fatalf("decode: %v, want errProposal", err)
			}
			return
		}
		q, err := decodeProposal(p.encode())
		if err != nil || q.by != p.by || q.seq != p.seq || !bytes.Equal(q.data, p.data) {
			t.Fatalf("%+v encodes to a payload that decodes to %+v (%v)", p, q, err)
		}
	})
}

// FuzzDecodeSnapshot: decodeSnapshot never panics, and what it decodes encodes back to
// data that decodes the same. The corpus is real snapshots.
func FuzzDecodeSnapshot(f *testing.F) {
	members, stores, _, err := miniGroup()
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range names(3) {
		snap, _ := stores[name].Snapshot()
		f.Add(snap.GetData())
	}
	data, err := members["m0"].sm.Snapshot()
	if err != nil {
		f.Fatal(err)
	}
	live, err := encodeSnapshot(data, members["m0"].names)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(live)
	f.Add([]byte(`{"data":"eyJhIjpudWxsfQ==","names":[{"name":"x","id":1},{"name":"x","id":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		names := map[uint64]string{}
		for _, v := range s.Names {
			names[v.ID] = v.Name
		}
		again, err := encodeSnapshot(s.Data, names)
		if err != nil {
			t.Fatalf("%+v does not encode: %v", s, err)
		}
		s2, err := decodeSnapshot(again)
		want := make([]Voter, 0, len(names))
		for id, n := range names {
			want = append(want, Voter{Name: n, ID: id})
		}
		if err != nil || !bytes.Equal(s.Data, s2.Data) || !slices.Equal(SortVoters(want), s2.Names) {
			t.Fatalf("%+v encodes to %q, which decodes to %+v (%v)", s, again, s2, err)
		}
	})
}

// FuzzBadgerRecords puts any value in place of a record of a stored group (the hard
// state, the log's bounds, the snapshot, the first, the last or a stray entry):
// OpenBadgerStorage fails with ErrDamaged, or what it opens answers every read and starts
// a member without a panic.
func FuzzBadgerRecords(f *testing.F) {
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil).WithMemTableSize(8 << 20))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = db.Close() })
	s := groupState(f, db, "")
	keys := [][]byte{s.key(recHardState), s.key(recLog), s.key(recSnapshot), s.entryKey(4), s.entryKey(9), s.entryKey(10)}
	base := map[string][]byte{}
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(BadgerPrefix), PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			base[string(it.Item().KeyCopy(nil))] = v
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	for i, k := range keys {
		f.Add(uint8(i), base[string(k)])
	}
	f.Add(uint8(1), logState{index: 3, term: 2, last: 12}.encode())
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, which uint8, value []byte) {
		key := keys[int(which)%len(keys)]
		err := db.Update(func(txn *badger.Txn) error {
			for k := range base { // the other keys a member may have written are entries past 9
				if err := txn.Delete([]byte(k)); err != nil {
					return err
				}
			}
			for i := uint64(10); i < 20; i++ {
				if err := txn.Delete(s.entryKey(i)); err != nil {
					return err
				}
			}
			for k, v := range base {
				if err := txn.Set([]byte(k), v); err != nil {
					return err
				}
			}
			return txn.Set(key, value)
		})
		if err != nil {
			t.Fatal(err)
		}
		st, err := OpenBadgerStorage(db, "")
		if err != nil {
			if !errors.Is(err, ErrDamaged) || !bytes.Contains([]byte(err.Error()), []byte(`(key "mr\x00`)) {
				t.Fatalf("open with %q = %x: %v, want ErrDamaged naming a key", key, value, err)
			}
			return
		}
		_, _, _ = st.InitialState()
		_, _ = st.Snapshot()
		first, _ := st.FirstIndex()
		last, _ := st.LastIndex()
		for i := first - 1; i <= last+1 && i-first < 64; i++ {
			_, _ = st.Term(i)
		}
		_, _ = st.Entries(first, min(last+1, first+64), 1<<20)
		m, err := New(Config{Self: "m1"}, st, newKV(nil), now)
		if err == nil {
			m.Tick(now.Add(5 * time.Second))
			m.Ready()
		}
	})
}
