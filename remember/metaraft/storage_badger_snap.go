package metaraft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// A snapshot's data is stored in chunks, its record apart: a snapshot of the cluster
// metadata may reach tens of MiB, past what one Badger value (the value log file size;
// 1 MiB in memory) or one transaction (15 % of a memtable) holds. The chunks of a new
// snapshot go under a generation of their own. The transaction that commits its record
// (recSnapshot; with the entries and the HardState of a Save) also deletes the older
// generation's chunks and takes the last chunks, as many as it has room for; the others
// are written before, in as many transactions as Badger needs, and made durable before
// it commits. A crash leaves the old snapshot or the new one whole, never a mix, and
// costs no more syncs than writing the data alone. Chunks of no record's generation (a
// crash or a failure before the commit) go at the next snapshot or at open.

// maxChunk is the most data one chunk holds: under Badger's value threshold, so chunks
// stay in the LSM tree, where compaction reclaims them once deleted (the store never
// collects its value log), and several fit one transaction.
const maxChunk = 256 << 10

// chunkSize returns the chunk size for db: maxChunk, or less when a quarter of Badger's
// transaction is smaller, or its value threshold (on disk, unless tiny: chunks would go
// to the value log anyway; in memory, the most a value holds).
func chunkSize(db *badger.DB) int {
	n := min(maxChunk, db.MaxBatchSize()/4)
	if t := db.Opts().ValueThreshold; t > 4<<10 || db.Opts().InMemory {
		n = min(n, t-1)
	}
	return int(max(n, 1))
}

// snapRecord is the last snapshot's record (recSnapshot): its metadata and how its data is
// stored.
type snapRecord struct {
	md      *pb.SnapshotMetadata // EnsureSnapshotMetadata(nil): no snapshot stored
	gen     uint64               // the chunks' generation (0: no snapshot stored)
	chunk   uint32               // bytes per chunk, the last one holding the rest
	chunks  uint32               // how many
	size    uint64               // the data's length
	sum     uint64               // xxhash64 of the data
	hasData bool                 // the data is not nil (raftpb tells nil from empty)
}

const (
	snapRecordVersion = 1
	snapRecordHeader  = 34 // version, flags, gen, chunk, chunks, size, sum
	snapHasData       = 1  // flag
)

// newSnapRecord returns the record of a snapshot of metadata md and data, stored as
// chunks of generation gen, chunk bytes each.
func newSnapRecord(md *pb.SnapshotMetadata, data []byte, gen uint64, chunk int) snapRecord {
	size := uint64(len(data))
	return snapRecord{md: md, gen: gen, chunk: uint32(chunk), chunks: uint32((size + uint64(chunk) - 1) / uint64(chunk)),
		size: size, sum: xxhash.Sum64(data), hasData: data != nil}
}

func (r snapRecord) encode() ([]byte, error) {
	b := make([]byte, 2, snapRecordHeader+proto.Size(r.md))
	b[0] = snapRecordVersion
	if r.hasData {
		b[1] = snapHasData
	}
	b = binary.BigEndian.AppendUint64(b, r.gen)
	b = binary.BigEndian.AppendUint32(b, r.chunk)
	b = binary.BigEndian.AppendUint32(b, r.chunks)
	b = binary.BigEndian.AppendUint64(b, r.size)
	b = binary.BigEndian.AppendUint64(b, r.sum)
	return proto.MarshalOptions{}.MarshalAppend(b, r.md)
}

func decodeSnapRecord(b []byte) (snapRecord, error) {
	if len(b) < snapRecordHeader || b[0] != snapRecordVersion {
		return snapRecord{}, fmt.Errorf("%d bytes, want at least %d of version %d", len(b), snapRecordHeader, snapRecordVersion)
	}
	if b[1]&^snapHasData != 0 {
		return snapRecord{}, fmt.Errorf("unknown flags %#x", b[1])
	}
	r := snapRecord{hasData: b[1]&snapHasData != 0, gen: binary.BigEndian.Uint64(b[2:]), chunk: binary.BigEndian.Uint32(b[10:]),
		chunks: binary.BigEndian.Uint32(b[14:]), size: binary.BigEndian.Uint64(b[18:]), sum: binary.BigEndian.Uint64(b[26:])}
	switch {
	case r.gen == 0:
		return snapRecord{}, errors.New("generation 0")
	case r.chunk == 0:
		return snapRecord{}, errors.New("chunks of 0 bytes")
	case (r.size+uint64(r.chunk)-1)/uint64(r.chunk) != uint64(r.chunks) || r.size > 1<<62:
		return snapRecord{}, fmt.Errorf("%d bytes in %d chunks of %d", r.size, r.chunks, r.chunk)
	case !r.hasData && r.size > 0:
		return snapRecord{}, fmt.Errorf("%d bytes of nil data", r.size)
	}
	r.md = &pb.SnapshotMetadata{}
	if err := proto.Unmarshal(b[snapRecordHeader:], r.md); err != nil {
		return snapRecord{}, err
	}
	r.md = pb.EnsureSnapshotMetadata(r.md)
	return r, nil
}

// chunkLen is the length of chunk i.
func (r snapRecord) chunkLen(i uint32) int {
	return int(min(uint64(r.chunk), r.size-uint64(i)*uint64(r.chunk)))
}

func (s *BadgerStorage) chunkKey(gen uint64, i uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(s.key(recChunk), gen), i)
}

// chunkOf parses a chunk's key.
func (s *BadgerStorage) chunkOf(key []byte) (gen uint64, i uint32, ok bool) {
	if len(key) != len(s.prefix)+13 || key[len(s.prefix)] != recChunk {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(key[len(s.prefix)+1:]), binary.BigEndian.Uint32(key[len(s.prefix)+9:]), true
}

// checkChunks checks, keys only, that the stored snapshot's chunks are there. It notes
// whether chunks of other generations (orphans) are, and sets nextGen past them all.
func (s *BadgerStorage) checkChunks(txn *badger.Txn) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: s.key(recChunk)})
	defer it.Close()
	next := uint32(0)
	top := s.snap.gen
	for it.Rewind(); it.Valid(); it.Next() {
		key := it.Item().KeyCopy(nil)
		gen, i, ok := s.chunkOf(key)
		switch {
		case !ok:
			return s.damaged(key, errors.New("not a snapshot chunk's key"))
		case gen != s.snap.gen:
			s.orphans = true
			top = max(top, gen)
		case i >= s.snap.chunks:
			return s.damaged(key, fmt.Errorf("out of place (the snapshot has %d chunks)", s.snap.chunks))
		case i > next:
			return s.damaged(s.chunkKey(gen, next), fmt.Errorf("missing (the snapshot has %d chunks)", s.snap.chunks))
		default:
			next++
		}
	}
	if next != s.snap.chunks {
		return s.damaged(s.chunkKey(s.snap.gen, next), fmt.Errorf("missing (the snapshot has %d chunks)", s.snap.chunks))
	}
	s.nextGen = top + 1
	return nil
}

// readSnapshot reads the stored snapshot's data back and checks it against its record.
func (s *BadgerStorage) readSnapshot() ([]byte, error) {
	r := s.snap
	if !r.hasData {
		return nil, nil
	}
	data := make([]byte, 0, min(r.size, 1<<28)) // a damaged record could claim any size
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: binary.BigEndian.AppendUint64(s.key(recChunk), r.gen)})
		defer it.Close()
		next := uint32(0)
		for it.Rewind(); it.Valid(); it.Next() {
			key := it.Item().Key()
			_, i, ok := s.chunkOf(key)
			switch {
			case !ok:
				return s.damaged(bytes.Clone(key), errors.New("not a snapshot chunk's key"))
			case i >= r.chunks:
				return s.damaged(bytes.Clone(key), fmt.Errorf("out of place (the snapshot has %d chunks)", r.chunks))
			case i > next:
				return s.damaged(s.chunkKey(r.gen, next), fmt.Errorf("missing (the snapshot has %d chunks)", r.chunks))
			}
			err := it.Item().Value(func(v []byte) error {
				if want := r.chunkLen(i); len(v) != want {
					return s.damaged(bytes.Clone(key), fmt.Errorf("%d bytes, want %d", len(v), want))
				}
				data = append(data, v...)
				return nil
			})
			if err != nil {
				if errors.Is(err, ErrDamaged) {
					return err
				}
				return fmt.Errorf("metaraft: read %q: %w", key, err)
			}
			next++
		}
		if next != r.chunks {
			return s.damaged(s.chunkKey(r.gen, next), fmt.Errorf("missing (the snapshot has %d chunks)", r.chunks))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if sum := xxhash.Sum64(data); sum != r.sum {
		return nil, s.damaged(s.key(recSnapshot), fmt.Errorf("its data (%d chunks of generation %d) has checksum %016x, want %016x", r.chunks, r.gen, sum, r.sum))
	}
	return data, nil
}

// putSnapshot prepares the commit of txn, which holds r's record: it deletes the last
// snapshot's chunks in txn (those it has room for: left reports others left), sets the
// last chunks of r in txn (those it has room for), and writes the others before, in as
// many transactions as Badger needs, durably.
func (s *BadgerStorage) putSnapshot(txn *badger.Txn, r snapRecord, data []byte) (left bool, err error) {
	for i := range s.snap.chunks {
		key := s.chunkKey(s.snap.gen, i)
		if err := txn.Delete(key); errors.Is(err, badger.ErrTxnTooBig) {
			left = true
			break
		} else if err != nil {
			return left, fmt.Errorf("metaraft: delete %q: %w", key, err)
		}
	}
	chunk := func(i uint32) []byte {
		off := uint64(i) * uint64(r.chunk)
		return data[off : off+uint64(r.chunkLen(i))]
	}
	first := r.chunks // chunks first.. go in txn
	for ; first > 0; first-- {
		key := s.chunkKey(r.gen, first-1)
		if err := txn.Set(key, chunk(first-1)); errors.Is(err, badger.ErrTxnTooBig) {
			break
		} else if err != nil {
			return left, fmt.Errorf("metaraft: write %q: %w", key, err)
		}
	}
	if first == 0 {
		return left, nil
	}
	b := s.batch()
	defer b.discard()
	for i := range first {
		if err := b.set(s.chunkKey(r.gen, i), chunk(i)); err != nil {
			return left, err
		}
	}
	if err := b.flush(); err != nil {
		return left, err
	}
	return left, s.syncDB()
}

// dropChunks deletes the chunks of every generation but keep.
func (s *BadgerStorage) dropChunks(keep uint64) error {
	return s.deleteUnder(s.key(recChunk), func(key []byte) bool {
		gen, _, ok := s.chunkOf(key)
		return ok && gen == keep
	})
}

// deleteUnder deletes every key under prefix but those keep tells to keep, in as many
// transactions as Badger needs.
func (s *BadgerStorage) deleteUnder(prefix []byte, keep func(key []byte) bool) error {
	var keys [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); !keep(k) {
				keys = append(keys, bytes.Clone(k))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("metaraft: list the keys under %q: %w", prefix, err)
	}
	b := s.batch()
	defer b.discard()
	for _, k := range keys {
		if err := b.delete(k); err != nil {
			return err
		}
	}
	return b.flush()
}

// batch writes keys in as many transactions as Badger needs: each one as large as
// Badger takes. They are not synced (see syncDB).
type batch struct {
	s   *BadgerStorage
	txn *badger.Txn
	n   int // keys in txn
}

func (s *BadgerStorage) batch() *batch {
	return &batch{s: s, txn: s.db.NewTransaction(true)}
}

func (b *batch) set(key, value []byte) error {
	return b.do(key, "write", func() error { return b.txn.Set(key, value) })
}

func (b *batch) delete(key []byte) error {
	return b.do(key, "delete", func() error { return b.txn.Delete(key) })
}

func (b *batch) do(key []byte, what string, f func() error) error {
	err := f()
	if errors.Is(err, badger.ErrTxnTooBig) && b.n > 0 {
		if err = b.flush(); err == nil {
			err = f()
		}
	}
	if err != nil {
		return fmt.Errorf("metaraft: %s %q: %w", what, key, err)
	}
	b.n++
	return nil
}

// flush commits the keys written so far, and starts another transaction.
func (b *batch) flush() error {
	if b.n == 0 {
		return nil
	}
	if err := b.txn.Commit(); err != nil {
		return fmt.Errorf("metaraft: commit under %q: %w", b.s.prefix, err)
	}
	b.s.committed()
	b.txn, b.n = b.s.db.NewTransaction(true), 0
	return nil
}

func (b *batch) discard() { b.txn.Discard() }

// syncDB makes what was committed durable, when the DB does not sync its writes.
func (s *BadgerStorage) syncDB() error {
	if !s.sync {
		return nil
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("metaraft: sync the raft state under %q: %w", s.prefix, err)
	}
	return nil
}

// committed is called after each transaction the storage commits: tests kill a write
// there.
func (s *BadgerStorage) committed() {
	if s.afterCommit != nil {
		s.afterCommit()
	}
}
