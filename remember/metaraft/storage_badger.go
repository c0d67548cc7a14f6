package metaraft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// BadgerPrefix is where a member's group state lives in its store's Badger by default.
const BadgerPrefix = "mr\x00"

// ErrDamaged says a record of the group's state in Badger does not decode or does not fit
// the others (the error names its key). The member's raft state cannot be trusted: remove
// the member from the group and let it rejoin with an empty storage.
var ErrDamaged = errors.New("metaraft: damaged raft storage")

// Records under the prefix: one byte names each.
const (
	recHardState = 'h' // the HardState (absent: none stored)
	recLog       = 'l' // logState: the log's bounds
	recSnapshot  = 's' // snapRecord: the last snapshot's metadata and chunks (absent: none)
	recChunk     = 'c' // + 8-byte generation + 4-byte index, big-endian: a snapshot's data chunk
	recEntry     = 'e' // + 8-byte big-endian index: a log entry
	recID        = 'i' // the replica id: 8 bytes, big-endian (drawn when first opened)
	recReset     = 'x' // a Reset under way: the keys but the id, the bounds and this are left over
)

// logState is the log's bounds: the entry at Index is the last one compacted or covered by
// a snapshot (only its term is kept, as raft.MemoryStorage keeps a dummy entry), and the
// entries Index+1..Last are stored.
type logState struct {
	index, term, last uint64
}

const logStateVersion = 1

func (l logState) encode() []byte {
	b := make([]byte, 1, 25)
	b[0] = logStateVersion
	b = binary.BigEndian.AppendUint64(b, l.index)
	b = binary.BigEndian.AppendUint64(b, l.term)
	return binary.BigEndian.AppendUint64(b, l.last)
}

func decodeLogState(b []byte) (logState, error) {
	if len(b) != 25 || b[0] != logStateVersion {
		return logState{}, fmt.Errorf("%d bytes, want 25 of version %d", len(b), logStateVersion)
	}
	l := logState{index: binary.BigEndian.Uint64(b[1:]), term: binary.BigEndian.Uint64(b[9:]), last: binary.BigEndian.Uint64(b[17:])}
	if l.last < l.index {
		return logState{}, fmt.Errorf("last index %d before the compacted index %d", l.last, l.index)
	}
	return l, nil
}

// BadgerStorage keeps a member's part of the group in a Badger it shares with the member's
// store (it does not own nor close the DB): every key under its prefix. Save, CreateSnapshot
// and Compact each commit in one transaction, on disk when they return (the DB's
// SyncWrites, or a Sync after the commit when the DB does not sync its writes); a
// snapshot's data goes in chunks, with that commit or before it (storage_badger_snap.go),
// so a snapshot of any size fits. It answers raft exactly as raft.MemoryStorage does. The HardState, the log's
// bounds, the last entry's term and the snapshot's record are kept in memory; entries and
// the snapshot's data are read from Badger (BenchmarkBadgerRead: 2–3 µs an entry, against
// ~300 µs for a synced Save).
type BadgerStorage struct {
	mu     sync.Mutex
	db     *badger.DB
	prefix []byte
	sync   bool // Sync after each commit: the DB does not sync its writes
	chunk  int  // the data in a snapshot chunk written from now on (chunkSize)

	id        uint64        // the replica id (recID)
	hs        *pb.HardState // nil: none stored
	snap      snapRecord    // the last snapshot's (md index 0: none)
	log       logState
	lastTerm  uint64 // the term of entry log.last: raft asks for it on every append
	nextGen   uint64 // the generation of the next snapshot's chunks
	orphans   bool   // chunks of no snapshot may be stored
	resetting bool   // a Reset committed but left keys to delete (recReset)

	afterCommit func() // tests: called after each transaction commits
	stepKeys    int    // tests: every Save goes in steps of at most this many keys (0: only when too big)
}

var _ Storage = (*BadgerStorage)(nil)

// OpenBadgerStorage returns the storage under prefix in db ("": BadgerPrefix), carrying on
// from what it holds (nothing: an empty storage). It finishes a Reset a crash cut short,
// and reads and checks every record: one that does not decode, or an entry or a snapshot
// chunk missing or out of place, fails it with ErrDamaged and the key (the chunks' data
// is checked by Snapshot). It deletes the chunks of no snapshot, which a crash during a
// snapshot's write leaves (should that fail, the next snapshot does).
func OpenBadgerStorage(db *badger.DB, prefix string) (*BadgerStorage, error) {
	if prefix == "" {
		prefix = BadgerPrefix
	}
	s := &BadgerStorage{db: db, prefix: []byte(prefix), sync: !db.Opts().SyncWrites, chunk: chunkSize(db),
		snap: snapRecord{md: pb.EnsureSnapshotMetadata(nil)}}
	err := db.View(func(txn *badger.Txn) error {
		_, found, err := s.value(txn, s.key(recReset))
		s.resetting = found
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.resetting {
		if err := s.finishReset(); err != nil {
			return nil, err
		}
	}
	err = db.View(func(txn *badger.Txn) error {
		hs := &pb.HardState{}
		found, err := s.get(txn, s.key(recHardState), hs)
		if err != nil {
			return err
		}
		if found {
			s.hs = hs
		}
		b, found, err := s.value(txn, s.key(recSnapshot))
		if err != nil {
			return err
		}
		if found {
			if s.snap, err = decodeSnapRecord(b); err != nil {
				return s.damaged(s.key(recSnapshot), err)
			}
		}
		b, found, err = s.value(txn, s.key(recLog))
		if err != nil {
			return err
		}
		if found {
			if s.log, err = decodeLogState(b); err != nil {
				return s.damaged(s.key(recLog), err)
			}
		}
		b, found, err = s.value(txn, s.key(recID))
		switch {
		case err != nil:
			return err
		case found && (len(b) != 8 || binary.BigEndian.Uint64(b) == 0):
			return s.damaged(s.key(recID), fmt.Errorf("%d bytes, want a nonzero 8-byte id", len(b)))
		case found:
			s.id = binary.BigEndian.Uint64(b)
		}
		if err := s.checkEntries(txn); err != nil {
			return err
		}
		return s.checkChunks(txn)
	})
	if err != nil {
		return nil, err
	}
	if s.orphans && s.dropChunks(s.snap.gen) == nil { // else they go with the next snapshot
		s.orphans = false
	}
	if s.id == 0 {
		if err := s.newID(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newID draws a replica id and stores it.
func (s *BadgerStorage) newID() error {
	w := s.begin()
	id := NewReplicaID()
	w.set(s.key(recID), binary.BigEndian.AppendUint64(nil, id))
	if err := w.commit(); err != nil {
		return err
	}
	s.id = id
	return nil
}

// ID implements Storage.
func (s *BadgerStorage) ID() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, nil
}

// Reset implements Storage: every record under the prefix goes, and a new id is drawn.
// One transaction forgets the group (the HardState, the snapshot's record and the log's
// bounds go, a new id and recReset are written); the entries and chunks it leaves are
// deleted in as many transactions as they take, then recReset. A crash in between leaves
// recReset, and the next open finishes the work; so does the next write, should the
// deletions fail (an error then comes from that write).
func (s *BadgerStorage) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.begin()
	defer w.txn.Discard()
	w.delete(s.key(recHardState))
	w.delete(s.key(recSnapshot))
	w.log = logState{}
	id := NewReplicaID()
	w.set(s.key(recID), binary.BigEndian.AppendUint64(nil, id))
	w.set(s.key(recReset), nil)
	if err := w.commit(); err != nil {
		return err
	}
	s.id, s.hs, s.snap, s.log, s.lastTerm = id, nil, snapRecord{md: pb.EnsureSnapshotMetadata(nil)}, logState{}, 0
	s.resetting = true
	_ = s.finishReset() // should it fail, the next write or open finishes it
	return nil
}

// finishReset deletes what a Reset left: every key under the prefix but the id and the
// log's bounds, recReset last.
func (s *BadgerStorage) finishReset() error {
	keep := [][]byte{s.key(recID), s.key(recLog), s.key(recReset)}
	err := s.deleteUnder(s.prefix, func(key []byte) bool {
		return slices.ContainsFunc(keep, func(k []byte) bool { return bytes.Equal(k, key) })
	})
	if err == nil {
		err = s.syncDB()
	}
	if err != nil {
		return fmt.Errorf("metaraft: finish a reset: %w", err)
	}
	w := s.begin()
	defer w.txn.Discard()
	w.delete(s.key(recReset))
	if err := w.commit(); err != nil {
		return fmt.Errorf("metaraft: finish a reset: %w", err)
	}
	s.resetting = false
	return nil
}

// writable finishes a Reset whose deletions failed before anything else is written.
func (s *BadgerStorage) writable() error {
	if s.resetting {
		return s.finishReset()
	}
	return nil
}

// checkEntries checks that the entries stored are exactly log.index+1..log.last, each
// decoding to the entry of its index, and keeps the last one's term.
func (s *BadgerStorage) checkEntries(txn *badger.Txn) error {
	s.lastTerm = s.log.term
	it := txn.NewIterator(badger.IteratorOptions{Prefix: s.key(recEntry), PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	next := s.log.index + 1
	for it.Rewind(); it.Valid(); it.Next() {
		key := it.Item().KeyCopy(nil)
		i, ok := s.entryIndex(key)
		switch {
		case !ok:
			return s.damaged(key, errors.New("not an entry's key"))
		case i < next || i > s.log.last:
			return s.damaged(key, fmt.Errorf("out of place (the log holds %d..%d)", s.log.index+1, s.log.last))
		case i > next:
			return s.damaged(s.entryKey(next), fmt.Errorf("missing (the log holds %d..%d)", s.log.index+1, s.log.last))
		}
		b, err := it.Item().ValueCopy(nil)
		if err != nil {
			return fmt.Errorf("metaraft: read %q: %w", key, err)
		}
		e, err := s.decodeEntry(key, i, b)
		if err != nil {
			return err
		}
		s.lastTerm = e.GetTerm()
		next++
	}
	if next != s.log.last+1 {
		return s.damaged(s.entryKey(next), fmt.Errorf("missing (the log holds %d..%d)", s.log.index+1, s.log.last))
	}
	return nil
}

func (s *BadgerStorage) key(rec byte) []byte {
	k := make([]byte, len(s.prefix)+1, len(s.prefix)+9)
	copy(k, s.prefix)
	k[len(s.prefix)] = rec
	return k
}

func (s *BadgerStorage) entryKey(i uint64) []byte {
	return binary.BigEndian.AppendUint64(s.key(recEntry), i)
}

func (s *BadgerStorage) entryIndex(key []byte) (uint64, bool) {
	if len(key) != len(s.prefix)+9 || key[len(s.prefix)] != recEntry {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[len(s.prefix)+1:]), true
}

// damaged says the record under key is damaged: err says how.
func (s *BadgerStorage) damaged(key []byte, err error) error {
	return fmt.Errorf("%w: %s (key %q): %w", ErrDamaged, s.record(key), key, err)
}

// record names the record under key.
func (s *BadgerStorage) record(key []byte) string {
	if i, ok := s.entryIndex(key); ok {
		return fmt.Sprintf("log entry %d", i)
	}
	if gen, i, ok := s.chunkOf(key); ok {
		return fmt.Sprintf("snapshot chunk %d of generation %d", i, gen)
	}
	switch string(key[len(s.prefix):]) {
	case string(recHardState):
		return "the hard state"
	case string(recLog):
		return "the log's bounds"
	case string(recSnapshot):
		return "the snapshot"
	case string(recID):
		return "the replica id"
	case string(recReset):
		return "the reset marker"
	}
	return "a record"
}

// value reads key's value (found false: absent).
func (s *BadgerStorage) value(txn *badger.Txn, key []byte) ([]byte, bool, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("metaraft: read %q: %w", key, err)
	}
	b, err := item.ValueCopy(nil)
	if err != nil {
		return nil, false, fmt.Errorf("metaraft: read %q: %w", key, err)
	}
	return b, true, nil
}

// get decodes key's value into m (found false: absent).
func (s *BadgerStorage) get(txn *badger.Txn, key []byte, m proto.Message) (bool, error) {
	b, found, err := s.value(txn, key)
	if err != nil || !found {
		return false, err
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return false, s.damaged(key, err)
	}
	return true, nil
}

// decodeEntry decodes entry i, stored under key.
func (s *BadgerStorage) decodeEntry(key []byte, i uint64, b []byte) (*pb.Entry, error) {
	e := &pb.Entry{}
	if err := proto.Unmarshal(b, e); err != nil {
		return nil, s.damaged(key, err)
	}
	if e.GetIndex() != i {
		return nil, s.damaged(key, fmt.Errorf("holds the entry of index %d", e.GetIndex()))
	}
	return e, nil
}

// entry reads entry i (within the log's bounds).
func (s *BadgerStorage) entry(txn *badger.Txn, i uint64) (*pb.Entry, error) {
	key := s.entryKey(i)
	b, found, err := s.value(txn, key)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, s.damaged(key, fmt.Errorf("missing (the log holds %d..%d)", s.log.index+1, s.log.last))
	}
	return s.decodeEntry(key, i, b)
}

// InitialState implements raft.Storage.
func (s *BadgerStorage) InitialState() (*pb.HardState, *pb.ConfState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs *pb.HardState
	if s.hs != nil {
		hs = proto.Clone(s.hs).(*pb.HardState)
	}
	return hs, pb.EnsureConfState(proto.Clone(pb.EnsureConfState(s.snap.md.GetConfState())).(*pb.ConfState)), nil
}

// Entries implements raft.Storage.
func (s *BadgerStorage) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lo <= s.log.index {
		return nil, raft.ErrCompacted
	}
	if hi > s.log.last+1 {
		return nil, fmt.Errorf("metaraft: entries [%d, %d) out of the log %d..%d", lo, hi, s.log.index+1, s.log.last)
	}
	if s.log.last == s.log.index {
		return nil, raft.ErrUnavailable
	}
	if lo > hi {
		return nil, fmt.Errorf("metaraft: entries [%d, %d): an empty range", lo, hi)
	}
	ents := make([]*pb.Entry, 0, min(hi-lo, 64))
	err := s.db.View(func(txn *badger.Txn) error {
		var size uint64
		for i := lo; i < hi; i++ {
			e, err := s.entry(txn, i)
			if err != nil {
				return err
			}
			// As raft's limitSize: at least one entry, then while the total fits maxSize.
			if size += uint64(proto.Size(e)); len(ents) > 0 && size > maxSize {
				break
			}
			ents = append(ents, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ents, nil
}

// Term implements raft.Storage.
func (s *BadgerStorage) Term(i uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.term(i)
}

func (s *BadgerStorage) term(i uint64) (uint64, error) {
	switch {
	case i < s.log.index:
		return 0, raft.ErrCompacted
	case i > s.log.last:
		return 0, raft.ErrUnavailable
	case i == s.log.index:
		return s.log.term, nil
	case i == s.log.last:
		return s.lastTerm, nil
	}
	var t uint64
	err := s.db.View(func(txn *badger.Txn) error {
		e, err := s.entry(txn, i)
		t = e.GetTerm()
		return err
	})
	return t, err
}

// LastIndex implements raft.Storage.
func (s *BadgerStorage) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.last, nil
}

// FirstIndex implements raft.Storage.
func (s *BadgerStorage) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.index + 1, nil
}

// Snapshot implements raft.Storage. It reads the data back from its chunks (raft asks
// for it when a follower needs it) and checks it: a chunk missing, out of place or of
// the wrong length, or data that does not match the record's checksum, fails it with
// ErrDamaged and the key.
func (s *BadgerStorage) Snapshot() (*pb.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap.gen == 0 {
		return pb.EnsureSnapshot(nil), nil
	}
	data, err := s.readSnapshot()
	if err != nil {
		return nil, err
	}
	return pb.EnsureSnapshot(&pb.Snapshot{Metadata: proto.Clone(s.snap.md).(*pb.SnapshotMetadata), Data: data}), nil
}

// Save implements Storage: the snapshot's record, the entries (the log's conflicting
// suffix goes) and the HardState in one transaction, on disk when it returns; the
// snapshot's chunks go with it or before (putSnapshot). On an error nothing changed
// (chunks written are orphans, deleted by the next snapshot or open). Entries too many
// for one Badger transaction go in steps (saveInSteps), each leaving a state raft
// restarts from: an error between two keeps the steps before it.
func (s *BadgerStorage) Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if s.stepKeys == 0 {
		err := s.saveOnce(hs, ents, snap)
		if !errors.Is(err, badger.ErrTxnTooBig) || len(ents) == 0 {
			return err
		}
	}
	return s.saveInSteps(hs, ents, snap)
}

// saveOnce is Save in one transaction.
func (s *BadgerStorage) saveOnce(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error {
	w := s.begin()
	defer w.txn.Discard()
	newSnap := s.snap
	if snap != nil && !raft.IsEmptySnap(snap) {
		md := snap.GetMetadata()
		if s.snap.md.GetIndex() != 0 && s.snap.md.GetIndex() >= md.GetIndex() {
			return fmt.Errorf("metaraft: store snapshot at %d: %w", md.GetIndex(), raft.ErrSnapOutOfDate)
		}
		newSnap = w.snapshot(pb.EnsureSnapshotMetadata(proto.Clone(md).(*pb.SnapshotMetadata)), snap.GetData())
		w.drop(w.log.index+1, w.log.last)
		w.log = logState{index: md.GetIndex(), term: md.GetTerm(), last: md.GetIndex()}
		w.lastTerm = md.GetTerm()
	}
	if err := w.append(ents); err != nil {
		return err
	}
	var newHS *pb.HardState
	if hs != nil && !raft.IsEmptyHardState(hs) {
		newHS = proto.Clone(hs).(*pb.HardState)
		w.put(s.key(recHardState), newHS)
	}
	if err := w.commit(); err != nil {
		return err
	}
	s.log, s.lastTerm = w.log, w.lastTerm
	if newHS != nil {
		s.hs = newHS
	}
	s.keepSnapshot(newSnap)
	return nil
}

// CreateSnapshot implements Storage: the record commits in one transaction, the data's
// chunks with it or before (putSnapshot). The snapshot returned holds data itself, not
// a copy (as raft.MemoryStorage keeps it).
func (s *BadgerStorage) CreateSnapshot(i uint64, cs *pb.ConfState, data []byte) (*pb.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return nil, err
	}
	if i <= s.snap.md.GetIndex() {
		return nil, raft.ErrSnapOutOfDate
	}
	if i > s.log.last {
		return nil, fmt.Errorf("metaraft: snapshot at %d past the last entry %d", i, s.log.last)
	}
	t, err := s.term(i)
	if err != nil {
		return nil, err
	}
	md := &pb.SnapshotMetadata{Index: new(i), Term: new(t), ConfState: pb.EnsureConfState(proto.Clone(s.snap.md.GetConfState()).(*pb.ConfState))}
	if cs != nil {
		md.ConfState = proto.Clone(cs).(*pb.ConfState)
	}
	w := s.begin()
	defer w.txn.Discard()
	r := w.snapshot(md, data)
	if err := w.commit(); err != nil {
		return nil, err
	}
	s.keepSnapshot(r)
	return &pb.Snapshot{Metadata: proto.Clone(md).(*pb.SnapshotMetadata), Data: data}, nil
}

// keepSnapshot takes r, committed, for the last snapshot, and deletes orphan chunks if
// there may be some. A failure to delete them is no failure of the write: they go with
// the next snapshot or at open.
func (s *BadgerStorage) keepSnapshot(r snapRecord) {
	if r.gen == s.snap.gen {
		return
	}
	s.snap = r
	if s.orphans && s.dropChunks(r.gen) == nil {
		s.orphans = false
	}
}

// Compact implements Storage.
func (s *BadgerStorage) Compact(i uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if i <= s.log.index {
		return raft.ErrCompacted
	}
	if i > s.log.last {
		return fmt.Errorf("metaraft: compact to %d past the last entry %d", i, s.log.last)
	}
	t, err := s.term(i)
	if err != nil {
		return err
	}
	w := s.begin()
	defer w.txn.Discard()
	w.drop(w.log.index+1, i)
	w.log.index, w.log.term = i, t
	if err := w.commit(); err != nil {
		return err
	}
	s.log = w.log
	return nil
}

// write is one transaction on the storage's records, and the log's bounds as it leaves
// them.
type write struct {
	s        *BadgerStorage
	txn      *badger.Txn
	log      logState
	lastTerm uint64
	n        int         // keys set or deleted
	err      error       // the first failed Set or Delete
	snap     *snapRecord // a snapshot's record set: its chunks go with it or before
	data     []byte      // the snapshot's data
}

func (s *BadgerStorage) begin() *write {
	return &write{s: s, txn: s.db.NewTransaction(true), log: s.log, lastTerm: s.lastTerm}
}

func (w *write) set(key, value []byte) {
	if w.err == nil {
		w.n++
		if err := w.txn.Set(key, value); err != nil {
			w.err = fmt.Errorf("metaraft: write %q: %w", key, err)
		}
	}
}

func (w *write) delete(key []byte) {
	if w.err == nil {
		w.n++
		if err := w.txn.Delete(key); err != nil {
			w.err = fmt.Errorf("metaraft: delete %q: %w", key, err)
		}
	}
}

// snapshot sets the record of a snapshot of metadata md and data, whose chunks, under a
// new generation, commit writes (the transaction takes what it has room for, so it never
// grows past Badger's limit whatever the data's size). It returns the record.
func (w *write) snapshot(md *pb.SnapshotMetadata, data []byte) snapRecord {
	s := w.s
	r := newSnapRecord(md, data, s.nextGen, s.chunk)
	s.nextGen++ // never reused, even by a write that failed: its chunks may be left
	b, err := r.encode()
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("metaraft: encode %q: %w", s.key(recSnapshot), err)
	}
	w.set(s.key(recSnapshot), b)
	w.snap, w.data = &r, data
	return r
}

func (w *write) put(key []byte, m proto.Message) {
	b, err := proto.Marshal(m)
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("metaraft: encode %q: %w", key, err)
	}
	w.set(key, b)
}

// drop deletes entries lo..hi.
func (w *write) drop(lo, hi uint64) {
	for i := lo; i <= hi && w.err == nil; i++ {
		w.delete(w.s.entryKey(i))
	}
}

// append stores ents as raft.MemoryStorage's Append does: the entries already compacted
// are skipped, and the log from the first new one on is replaced.
func (w *write) append(ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	first := w.log.index + 1
	at := ents[0].GetIndex()
	last := at + uint64(len(ents)) - 1
	if last < first {
		return nil
	}
	if at < first {
		ents, at = ents[first-at:], first
	}
	if at > w.log.last+1 {
		return fmt.Errorf("metaraft: append %d entries at %d: the log ends at %d", len(ents), at, w.log.last)
	}
	for j, e := range ents {
		if e.GetIndex() != at+uint64(j) {
			return fmt.Errorf("metaraft: append entries at %d: entry %d has index %d", at, j, e.GetIndex())
		}
		w.put(w.s.entryKey(e.GetIndex()), e)
	}
	w.drop(last+1, w.log.last)
	w.log.last, w.lastTerm = last, ents[len(ents)-1].GetTerm()
	return nil
}

// commit writes the log's bounds if they changed and commits, durably, with a snapshot's
// chunks (putSnapshot). If that fails, the chunks written are orphans.
func (w *write) commit() error {
	if w.log != w.s.log {
		w.set(w.s.key(recLog), w.log.encode())
	}
	if w.err != nil {
		if errors.Is(w.err, badger.ErrTxnTooBig) {
			return fmt.Errorf("%w (the log a snapshot replaces or a compaction drops must fit one Badger transaction: raise the memtable size)", w.err)
		}
		return w.err
	}
	if w.n == 0 {
		return nil // a Ready with frames only: nothing to store
	}
	orphans := w.s.orphans
	if w.snap != nil {
		// Until the commit, a write that fails or is cut short leaves chunks of no record.
		w.s.orphans = true
		left, err := w.s.putSnapshot(w.txn, *w.snap, w.data)
		if err != nil {
			return err
		}
		orphans = orphans || left
	}
	if err := w.txn.Commit(); err != nil {
		return fmt.Errorf("metaraft: commit the raft state under %q: %w", w.s.prefix, err)
	}
	w.s.orphans = orphans
	if err := w.s.syncDB(); err != nil {
		return err
	}
	w.s.committed()
	return nil
}
