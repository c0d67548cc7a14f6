package remember

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"

	"github.com/shardmesh/shardmesh/remember/metaraft"
)

// Local is a stopped member's store directory opened offline, for `shardctl data inspect`,
// `remove-internal-data` and backups. It sees only this member's replica: nothing is read
// from or written to other members.
type Local struct {
	dir string
	db  *badger.DB
}

// OpenLocal opens the store directory dir of a stopped member. It refuses, with an error
// wrapping ErrInUse that names dir, when a daemon (or a Store) holds it; and it does not
// create a store where there is none.
func OpenLocal(dir string) (*Local, error) {
	if err := checkStoreDir(dir); err != nil {
		return nil, err
	}
	db, err := openBadger(dir, slog.New(slog.DiscardHandler), nil, DefaultMinFreeSpace)
	if err != nil {
		return nil, err
	}
	return &Local{dir: dir, db: db}, nil
}

// checkStoreDir checks that dir holds a Badger database (its MANIFEST).
func checkStoreDir(dir string) error {
	ok, err := fileExists(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		return fmt.Errorf("remember: %w", err)
	}
	if !ok {
		return fmt.Errorf("remember: %s holds no store (no Badger MANIFEST); is it <data-dir>/store of a member?", dir)
	}
	return nil
}

func fileExists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// Scan calls fn for every record whose key starts with prefix, in key order, tombstones
// included (Deleted set); keys that only have a fence floor are skipped. An error from fn
// stops the scan and is returned.
func (l *Local) Scan(prefix string, fn func(Record) error) (err error) {
	defer recovered(l.dir, &err)
	return iterate(l.db, prefix, true, func(e *entry) error {
		if e.rec.Version.IsZero() {
			return nil
		}
		return fn(e.rec)
	})
}

// Entry is one key of a stopped member's directory as Entries lists it: its record (a zero
// Version when the key holds only a fence floor; Value left out), its fence floor, and the
// bytes stored for it.
type Entry struct {
	Record
	// Floor is the key's fence floor (0: none).
	Floor uint64
	// Bytes is what the key takes in the store before Badger's compression: the stored
	// record's key and value plus its summary in the anti-entropy index.
	Bytes int64
}

// Entries calls fn for every key whose key starts with prefix, in key order: exactly the
// keys DeletePrefix(prefix) removes, tombstones and keys that only have a fence floor
// included. Values are not read. An error from fn stops the walk and is returned.
func (l *Local) Entries(prefix string, fn func(Entry) error) (err error) {
	defer recovered(l.dir, &err)
	p := storeKey(prefix)
	return l.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix, opts.PrefetchValues = p, false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(p); it.ValidForPrefix(p); it.Next() {
			item := it.Item()
			key := string(item.Key()[len(recordPrefix):])
			var e entry
			err := item.Value(func(v []byte) error {
				var derr error
				e, derr = decodeEntry(key, v, false)
				return derr
			})
			if err != nil {
				return fmt.Errorf("remember: %s: %w", l.dir, err)
			}
			summary := int64(len(indexKey(key)) + len(encodeSummary(nil, &e)))
			if err := fn(Entry{Record: e.rec, Floor: e.floor, Bytes: int64(len(item.Key())) + int64(item.ValueSize()) + summary}); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeletePrefix removes every record (and fence floor) whose key starts with prefix from
// this directory and returns how many it removed, calling progress with the running count
// after each chunk of 10,000. The prefix is compared byte by byte: end it with the key
// separator ("re/counter/", not "re/counter", which also matches "re/counter2/…"). The removal is physical, not a tombstone: run it on every
// member's directory, or anti-entropy brings the records back from a member that still has
// them.
func (l *Local) DeletePrefix(prefix string, progress func(done int)) (n int, err error) {
	defer recovered(l.dir, &err)
	err = deleteKeys(l.db, storeKey(prefix), func(done int) {
		n = done
		if progress != nil {
			progress(done)
		}
	})
	if err != nil {
		return n, fmt.Errorf("remember: delete %q in %s: %w", prefix, l.dir, err)
	}
	return n, nil
}

// ForgetMetaGroup resets this store's replica of the metadata group (a new replica id,
// nothing of the group's log kept): a store restored from a backup must not carry on as
// the replica it was when the backup was taken, since the group went on after it (a voter
// that forgot what it acknowledged breaks the group's promises). Its metadata records stay:
// the daemon merges them into the group (MetaSeedMarker).
func (l *Local) ForgetMetaGroup() (err error) {
	defer recovered(l.dir, &err)
	st, err := metaraft.OpenBadgerStorage(l.db, metaRaftPrefix)
	if err != nil {
		return fmt.Errorf("remember: open the metadata group's storage in %s: %w", l.dir, err)
	}
	if err := st.Reset(); err != nil {
		return fmt.Errorf("remember: reset the metadata group's storage in %s: %w", l.dir, err)
	}
	return nil
}

// Rekey moves every entry under prefix that rekey maps to another key, as it is (record,
// version, tombstone, fence floor), and returns how many it moved: how a store's keys
// change layout between releases. Run it on every member's directory before they start.
// It works in commits of 10,000 entries, calling progress (if set) with the running count
// after each; a moved key may come under prefix again, so rekey must leave the keys it
// makes alone (false). Stopped halfway, it moves the rest when run again.
func (l *Local) Rekey(prefix string, rekey func(key string) (string, bool), progress func(moved int)) (n int, err error) {
	defer recovered(l.dir, &err)
	after := ""
	for {
		page, more, err := scanPage(l.db, prefix, after, deleteChunk)
		if err != nil {
			return n, fmt.Errorf("remember: read %q in %s: %w", prefix, l.dir, err)
		}
		if len(page) == 0 {
			return n, nil
		}
		after = page[len(page)-1].rec.Key
		moved, err := l.rekeyPage(page, rekey)
		if err != nil {
			return n, fmt.Errorf("remember: rekey in %s: %w", l.dir, err)
		}
		if moved > 0 {
			n += moved
			if progress != nil {
				progress(n)
			}
		}
		if !more {
			return n, nil
		}
	}
}

// rekeyPage moves the entries of page that rekey maps elsewhere, in one write batch.
func (l *Local) rekeyPage(page []entry, rekey func(string) (string, bool)) (int, error) {
	wb := l.db.NewWriteBatch()
	defer wb.Cancel()
	moved := 0
	for i := range page {
		e := &page[i]
		from := e.rec.Key
		to, ok := rekey(from)
		if !ok || to == from {
			continue
		}
		e.rec.Key = to
		for _, op := range []func() error{
			func() error { return wb.Set(storeKey(to), encodeEntry(nil, e)) },
			func() error { return wb.Set(indexKey(to), encodeSummary(nil, e)) },
			func() error { return wb.Delete(storeKey(from)) },
			func() error { return wb.Delete(indexKey(from)) },
		} {
			if err := op(); err != nil {
				return 0, err
			}
		}
		moved++
	}
	if moved == 0 {
		return 0, nil
	}
	return moved, wb.Flush()
}

// Backup writes a full backup of the directory to w in Badger's backup format (restore it
// with Restore into an empty directory) and returns the version it is consistent at.
func (l *Local) Backup(w io.Writer) (v uint64, err error) {
	defer recovered(l.dir, &err)
	v, err = l.db.Backup(w, 0)
	if err != nil {
		return 0, fmt.Errorf("remember: back up %s: %w", l.dir, err)
	}
	return v, nil
}

// Restore loads a backup written by Backup into dir, which must not hold a store yet.
func Restore(dir string, r io.Reader) error {
	if ok, _ := fileExists(filepath.Join(dir, "MANIFEST")); ok {
		return fmt.Errorf("remember: restore into %s: it already holds a store; restore into an empty directory", dir)
	}
	db, err := openBadger(dir, slog.New(slog.DiscardHandler), nil, DefaultMinFreeSpace)
	if err != nil {
		return err
	}
	if err := db.Load(r, 256); err != nil {
		_ = db.Close()
		return fmt.Errorf("remember: restore into %s: %w", dir, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("remember: restore into %s: %w", dir, err)
	}
	return nil
}

// Close closes the directory.
func (l *Local) Close() error {
	if err := l.db.Close(); err != nil {
		return fmt.Errorf("remember: close %s: %w", l.dir, err)
	}
	return nil
}
