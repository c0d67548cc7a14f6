package remember

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Badger key space. Every record (and fence floor) of key k is stored under recordPrefix+k;
// nothing else is stored yet, and other prefixes are free for later use.
const recordPrefix = "r"

// entryFormat is the first byte of every stored entry; a different one is refused.
const entryFormat = 1

// Flags of a stored entry.
const flagDeleted = 1

// storeKey returns the Badger key of key.
func storeKey(key string) []byte {
	b := make([]byte, 0, len(recordPrefix)+len(key))
	return append(append(b, recordPrefix...), key...)
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
	return db.View(func(txn *badger.Txn) error {
		p := storeKey(prefix)
		opts := badger.DefaultIteratorOptions
		opts.Prefix = p
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(p); it.ValidForPrefix(p); it.Next() {
			item := it.Item()
			key := string(item.Key()[len(recordPrefix):])
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
