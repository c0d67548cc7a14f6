package remember

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/shardmesh/shardmesh/remember/metaraft"
)

// Badger key space. Every record (and fence floor) of key k is stored under recordPrefix+k,
// and its summary (the entry without its value) under indexPrefix+bucket+k, bucket being
// bucketOf(k) as two big-endian bytes: anti-entropy lists a bucket's summaries with one
// prefix scan instead of a scan of the whole store. Other prefixes are free for later use.
const (
	recordPrefix = "r"
	indexPrefix  = "b"
	// metaRaftPrefix holds this member's replica of the metadata group, when it is a voter:
	// the Raft log, HardState, snapshot and replica id (metaraft.BadgerStorage).
	metaRaftPrefix = metaraft.BadgerPrefix
)

// entryFormat is the first byte of every stored entry; a different one is refused.
const entryFormat = 1

// Flags of a stored entry.
const flagDeleted = 1

// storeKey returns the Badger key of key.
func storeKey(key string) []byte {
	b := make([]byte, 0, len(recordPrefix)+len(key))
	return append(append(b, recordPrefix...), key...)
}

// indexKey returns the Badger key of key's summary.
func indexKey(key string) []byte {
	b := make([]byte, 0, len(indexPrefix)+2+len(key))
	b = append(b, indexPrefix...)
	b = binary.BigEndian.AppendUint16(b, uint16(bucketOf(key)))
	return append(b, key...)
}

// bucketPrefix returns the Badger prefix of bucket b's summaries.
func bucketPrefix(b int) []byte {
	return binary.BigEndian.AppendUint16([]byte(indexPrefix), uint16(b))
}

// encodeSummary appends e's summary (its stored form without the value) to dst.
func encodeSummary(dst []byte, e *entry) []byte {
	s := *e
	s.rec.Value = nil
	return encodeEntry(dst, &s)
}

// encodeEntry appends e in the stored format to dst:
//
//	format byte, flags byte, uvarint epoch, uvarint counter, uvarint floor,
//	uvarint len(writer), writer, 8-byte little-endian value hash, value
func encodeEntry(dst []byte, e *entry) []byte {
	var flags byte
	if e.rec.Deleted {
		flags |= flagDeleted
	}
	dst = append(dst, entryFormat, flags)
	dst = binary.AppendUvarint(dst, e.rec.Version.Epoch)
	dst = binary.AppendUvarint(dst, e.rec.Version.Counter)
	dst = binary.AppendUvarint(dst, e.floor)
	dst = binary.AppendUvarint(dst, uint64(len(e.rec.Version.Writer)))
	dst = append(dst, e.rec.Version.Writer...)
	dst = binary.LittleEndian.AppendUint64(dst, e.hash)
	return append(dst, e.rec.Value...)
}

var errCorrupt = errors.New("corrupt stored entry")

// decodeEntry decodes a stored entry of key. With withValue false the value is left out
// (digests and summaries need only the hash); otherwise it is copied out of b.
func decodeEntry(key string, b []byte, withValue bool) (entry, error) {
	e := entry{rec: Record{Key: key}}
	if len(b) < 2 || b[0] != entryFormat {
		return e, fmt.Errorf("%w %q: format byte %v", errCorrupt, key, b[:min(len(b), 1)])
	}
	e.rec.Deleted = b[1]&flagDeleted != 0
	b = b[2:]
	var fields [4]uint64
	for i := range fields {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return e, fmt.Errorf("%w %q: bad varint", errCorrupt, key)
		}
		fields[i], b = v, b[n:]
	}
	e.rec.Version.Epoch, e.rec.Version.Counter, e.floor = fields[0], fields[1], fields[2]
	if fields[3] > uint64(len(b)) || uint64(len(b))-fields[3] < 8 {
		return e, fmt.Errorf("%w %q: truncated", errCorrupt, key)
	}
	e.rec.Version.Writer = string(b[:fields[3]])
	b = b[fields[3]:]
	e.hash = binary.LittleEndian.Uint64(b)
	if withValue && len(b) > 8 {
		e.rec.Value = append([]byte(nil), b[8:]...)
	}
	return e, nil
}

// readEntries reads keys' entries (absent ones included) in one transaction.
func readEntries(db *badger.DB, keys []string) ([]entry, error) {
	out := make([]entry, len(keys))
	err := db.View(func(txn *badger.Txn) error {
		for i, key := range keys {
			e, err := getEntry(txn, key, true)
			if err != nil {
				return err
			}
			out[i] = e
		}
		return nil
	})
	return out, err
}

// iterate calls fn for every stored entry whose key starts with prefix, in key order, in
// one read transaction. Without withValue values are not copied out (e.rec.Value is nil).
// The entry passed to fn may be kept.
func iterate(db *badger.DB, prefix string, withValue bool, fn func(*entry) error) error {
	return scanStored(db, storeKey(prefix), len(recordPrefix), withValue, fn)
}

// scanPage returns the entries under prefix after the key after ("": from the first), at
// most limit of them (0: all), values included; more says the page was cut at its limit.
func scanPage(db *badger.DB, prefix, after string, limit int) (es []entry, more bool, err error) {
	p := storeKey(prefix)
	start := p
	if after != "" {
		start = storeKey(after)
	}
	err = db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = p
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(start); it.ValidForPrefix(p); it.Next() {
			item := it.Item()
			key := string(item.Key()[len(recordPrefix):])
			if after != "" && key <= after {
				continue
			}
			if limit > 0 && len(es) == limit {
				more = true
				return nil
			}
			var e entry
			if err := item.Value(func(v []byte) error {
				var derr error
				e, derr = decodeEntry(key, v, true)
				return derr
			}); err != nil {
				return err
			}
			es = append(es, e)
		}
		return nil
	})
	return es, more, err
}

// iterateBucket calls fn with the summary (no value) of every entry of bucket b.
func iterateBucket(db *badger.DB, b int, fn func(*entry) error) error {
	return scanStored(db, bucketPrefix(b), len(indexPrefix)+2, false, fn)
}

// scanStored decodes every stored entry under the Badger prefix p, whose keys are the
// entry's key after skip bytes.
func scanStored(db *badger.DB, p []byte, skip int, withValue bool, fn func(*entry) error) error {
	return db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = p
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(p); it.ValidForPrefix(p); it.Next() {
			item := it.Item()
			key := string(item.Key()[skip:])
			var e entry
			err := item.Value(func(v []byte) error {
				var derr error
				e, derr = decodeEntry(key, v, withValue)
				return derr
			})
			if err != nil {
				return err
			}
			if err := fn(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// rebuildIndex rewrites every summary from the records.
func rebuildIndex(db *badger.DB) error {
	if err := deleteKeys(db, []byte(indexPrefix), nil); err != nil {
		return err
	}
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	err := iterate(db, "", false, func(e *entry) error {
		return wb.Set(indexKey(e.rec.Key), encodeSummary(nil, e))
	})
	if err != nil {
		return err
	}
	return wb.Flush()
}

// deleteChunk is how many Badger keys deleteKeys deletes per commit.
const deleteChunk = 10000

// deleteKeys deletes every Badger key under prefix p, with the summary of each record
// deleted (when p is under recordPrefix), in commits of deleteChunk records; progress (if
// set) gets the running count of keys under p deleted after each.
func deleteKeys(db *badger.DB, p []byte, progress func(int)) error {
	done := 0
	// Each chunk starts after the last key deleted, not at p again: walking over the deleted
	// keys of every earlier chunk made a removal quadratic (1M keys: 38k/s instead of 74k/s).
	from := p
	for {
		var keys [][]byte
		err := db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix, opts.PrefetchValues = p, false
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Seek(from); it.ValidForPrefix(p) && len(keys) < deleteChunk; it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		wb := db.NewWriteBatch()
		for _, k := range keys {
			err := wb.Delete(k)
			if err == nil && string(k[:len(recordPrefix)]) == recordPrefix {
				err = wb.Delete(indexKey(string(k[len(recordPrefix):])))
			}
			if err != nil {
				wb.Cancel()
				return err
			}
		}
		if err := wb.Flush(); err != nil {
			return err
		}
		from = append(keys[len(keys)-1], 0) // the smallest key after the last one deleted
		done += len(keys)
		if progress != nil {
			progress(done)
		}
	}
}
