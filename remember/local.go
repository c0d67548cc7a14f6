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
