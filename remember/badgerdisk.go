package remember

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// maxCommitOps bounds what one commit takes (records and keys) so that a commit, and the
// time an operation waits behind it, stays short.
const maxCommitOps = 16384

// maxDiskReads bounds the reads, scans and bucket listings carried out at once.
const maxDiskReads = 16

// badgerDisk carries a Machine's disk operations out on Badger (see the contract in
// disk.go): applies on one committer goroutine, in order, several queued ones per commit
// (one transaction, one fsync); reads on goroutines of their own. Results go to done.
type badgerDisk struct {
	db   *badger.DB
	dir  string
	log  *slog.Logger
	done func(DiskResult) // must not block

	applies chan DiskOp
	reads   chan struct{} // a place per read in progress
	quit    chan struct{} // closed by close: nothing new starts
	wg      sync.WaitGroup

	commits atomic.Uint64
	busy    atomic.Int64  // nanoseconds spent committing
	met     *storeMetrics // nil without metrics
	space   *diskGuard    // admits each commit (diskspace.go)
	caught  func(where string)
}

func newBadgerDisk(db *badger.DB, dir string, log *slog.Logger, met *storeMetrics, space *diskGuard, caught func(string), done func(DiskResult)) *badgerDisk {
	d := &badgerDisk{db: db, dir: dir, log: log, met: met, space: space, caught: caught, done: done,
		applies: make(chan DiskOp, 1024), reads: make(chan struct{}, maxDiskReads), quit: make(chan struct{})}
	d.wg.Add(1)
	go d.commitLoop()
	return d
}

// do starts op; its result goes to done. After close it fails op at once.
func (d *badgerDisk) do(op DiskOp) {
	if op.Kind == DiskApply {
		select {
		case d.applies <- op:
		case <-d.quit:
			d.done(failed(op, ErrClosed))
		}
		return
	}
	select {
	case d.reads <- struct{}{}:
	case <-d.quit:
		d.done(failed(op, ErrClosed))
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() { <-d.reads }()
		defer d.caught("a disk read")
		d.done(d.read(op))
	}()
}

// close stops the disk: operations in progress finish, queued applies fail with ErrClosed.
func (d *badgerDisk) close() {
	close(d.quit)
	d.wg.Wait()
}

// commitLoop commits queued applies until the disk closes.
func (d *badgerDisk) commitLoop() {
	defer d.wg.Done()
	defer d.caught("the committer")
	var batch []DiskOp
	for {
		select {
		case op := <-d.applies:
			batch = append(batch[:0], op)
		case <-d.quit:
			for {
				select {
				case op := <-d.applies:
					d.done(failed(op, ErrClosed))
				default:
					return
				}
			}
		}
		n := batch[0].size()
	more:
		for n < maxCommitOps {
			select {
			case op := <-d.applies:
				batch = append(batch, op)
				n += op.size()
			default:
				break more
			}
		}
		for _, res := range d.commit(batch) {
			d.done(res)
		}
		clear(batch)
	}
}

func (op *DiskOp) size() int {
	n := 0
	for i := range op.apply {
		n += op.apply[i].size()
	}
	return n
}

// commit applies ops in one read transaction and one synchronous write.
func (d *badgerDisk) commit(ops []DiskOp) []DiskResult {
	if err := d.space.admit(commitBytes(ops)); err != nil {
		// Refused for want of space: the guard logged the change of state once.
		out := make([]DiskResult, len(ops))
		for i, op := range ops {
			out[i] = failed(op, err)
		}
		return out
	}
	start := time.Now()
	results := applyMany(ops, d.load, d.store, d.reread)
	if err := results[0].err; err != nil {
		d.log.Error("local commit failed", "dir", d.dir, "err", err)
	}
	took := time.Since(start)
	d.commits.Add(1)
	d.busy.Add(int64(took))
	if d.met != nil {
		records := 0
		for i := range ops {
			records += ops[i].size()
		}
		d.met.committed(records, took)
	}
	return results
}

// load reads the current entries of keys.
func (d *badgerDisk) load(keys []string) (map[string]entry, error) {
	out := make(map[string]entry, len(keys))
	err := d.db.View(func(txn *badger.Txn) error {
		for _, key := range keys {
			e, err := getEntry(txn, key, true)
			if err != nil {
				return err
			}
			out[key] = e
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("remember: read %s: %w", d.dir, err)
	}
	return out, nil
}

// store writes the entries that changed, each with its summary. A commit that fits one
// Badger transaction (the usual case) is one transaction; a larger one goes through a
// WriteBatch, which splits it. Either way SyncWrites puts it on disk before store returns.
func (d *badgerDisk) store(cs []change) error {
	if len(cs) == 0 {
		return nil
	}
	kvs := make([][2][]byte, 0, 2*len(cs))
	for i := range cs {
		c := &cs[i]
		kvs = append(kvs, [2][]byte{storeKey(c.key), encodeEntry(nil, &c.after)}, [2][]byte{indexKey(c.key), encodeSummary(nil, &c.after)})
	}
	txn := d.db.NewTransaction(true)
	defer txn.Discard()
	for _, kv := range kvs {
		err := txn.Set(kv[0], kv[1])
		if errors.Is(err, badger.ErrTxnTooBig) {
			return d.storeBatch(kvs)
		}
		if err != nil {
			return fmt.Errorf("remember: commit to %s: %w", d.dir, err)
		}
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("remember: commit to %s: %w", d.dir, err)
	}
	return nil
}

// storeBatch writes kvs through a WriteBatch.
func (d *badgerDisk) storeBatch(kvs [][2][]byte) error {
	wb := d.db.NewWriteBatch()
	defer wb.Cancel()
	for _, kv := range kvs {
		if err := wb.Set(kv[0], kv[1]); err != nil {
			return fmt.Errorf("remember: commit to %s: %w", d.dir, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("remember: commit to %s: %w", d.dir, err)
	}
	return nil
}

// reread returns the changes of a failed commit that are on disk all the same (part of a
// WriteBatch may be): each key as it is now against what it was before the commit. A key
// that cannot be read is left out (the digest may be off for it until the next start).
func (d *badgerDisk) reread(meant []change) []change {
	var out []change
	err := d.db.View(func(txn *badger.Txn) error {
		for _, c := range meant {
			now, err := getEntry(txn, c.key, false)
			if err != nil {
				return err
			}
			if !sameState(&c.before, &now) {
				out = append(out, change{key: c.key, before: c.before, after: now})
			}
		}
		return nil
	})
	if err != nil {
		d.log.Error("cannot re-read entries after a failed commit; anti-entropy digests may be off until restart", "dir", d.dir, "err", err)
	}
	return out
}

// read carries out a read, a scan or a bucket listing.
func (d *badgerDisk) read(op DiskOp) DiskResult {
	var es []entry
	var err error
	switch op.Kind {
	case DiskRead:
		es, err = readEntries(d.db, op.keys)
	case DiskScan:
		err = iterate(d.db, op.prefix, true, func(e *entry) error {
			es = append(es, *e)
			return nil
		})
	case DiskBuckets:
		buckets := slices.Clone(op.buckets)
		slices.Sort(buckets)
		for _, b := range buckets {
			err = iterateBucket(d.db, b, func(e *entry) error {
				es = append(es, *e)
				return nil
			})
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		return failed(op, fmt.Errorf("remember: read %s: %w", d.dir, err))
	}
	return DiskResult{ID: op.ID, entries: es}
}

// state computes what a machine starts from: the digest of everything stored, the highest
// counter, the number of entries. If the summary index does not match the records (a crash
// in the middle of a commit that Badger split into several transactions), it rebuilds the
// index.
func (d *badgerDisk) state() (DiskState, error) {
	var st DiskState
	var none entry
	err := iterate(d.db, "", false, func(e *entry) error {
		st.dig.update(e.rec.Key, &none, e)
		st.maxCounter = max(st.maxCounter, e.rec.Version.Counter)
		st.entries++
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("remember: read store in %s: %w", d.dir, err)
	}
	var indexed digest
	err = scanStored(d.db, []byte(indexPrefix), len(indexPrefix)+2, false, func(e *entry) error {
		indexed.update(e.rec.Key, &none, e)
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("remember: read store in %s: %w", d.dir, err)
	}
	if indexed != st.dig {
		d.log.Warn("the anti-entropy index does not match the records (a crash during a commit?); rebuilding it", "dir", d.dir, "entries", st.entries)
		if err := rebuildIndex(d.db); err != nil {
			return st, fmt.Errorf("remember: rebuild the index of %s: %w", d.dir, err)
		}
	}
	return st, nil
}

// getEntry reads key's entry in txn; a key not stored yields an absent entry.
func getEntry(txn *badger.Txn, key string, withValue bool) (entry, error) {
	item, err := txn.Get(storeKey(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return entry{rec: Record{Key: key}}, nil
	}
	if err != nil {
		return entry{}, err
	}
	var e entry
	err = item.Value(func(v []byte) error {
		var derr error
		e, derr = decodeEntry(key, v, withValue)
		return derr
	})
	return e, err
}
