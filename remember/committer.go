package remember

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// opKind says what an applyOp does to the local replica.
type opKind uint8

const (
	opWrite opKind = iota + 1 // fenced writes (from this member's Write or a peer's)
	opMerge                   // records to merge (read repair, anti-entropy)
	opFence                   // raise fence floors and read the entries
)

// applyOp is one operation for the local replica. done is called once, on the committer's
// goroutine, after the operation is on disk (or failed): it must not block.
type applyOp struct {
	kind   opKind
	recs   []entry  // opWrite, opMerge
	keys   []string // opFence
	fences []uint64 // opFence, as long as keys
	done   func(applyResult)
}

func (op *applyOp) size() int { return len(op.recs) + len(op.keys) }

// applyResult is the outcome of an applyOp.
type applyResult struct {
	refused []refusal // opWrite: the writes refused for fencing
	entries []entry   // opFence: the keys' entries after raising their floors
	changed int       // opMerge: how many entries changed
	err     error     // nothing of the operation is known to be stored
}

// refusal is a write refused for fencing: its index in the operation, and the lowest epoch
// the replica accepts for its key.
type refusal struct {
	index int
	need  uint64
}

// maxCommitOps bounds what one commit takes (records and keys) so that a commit, and the
// time an operation waits behind it, stays short.
const maxCommitOps = 16384

// committer applies operations to the local replica in group commits: it takes every
// operation queued while the previous commit ran, reads the entries they touch in one Badger
// transaction, decides with the merge rules (applyWrite, merge, raiseFloor), writes what
// changed in one WriteBatch (SyncWrites: on disk before it returns), updates the digest, and
// then reports to every operation. It is the only writer of the database, so a replica
// serialises writes and fences of a key: a fence raised before a write refuses it, a write
// stored before a fence is in the entries the fence returns.
type committer struct {
	db    *badger.DB
	log   *slog.Logger
	clock *clock
	ops   chan *applyOp
	quit  <-chan struct{} // closed when the store starts closing: submit gives up
	stop  <-chan struct{} // closed when the store's other goroutines are gone: run ends

	mu  sync.Mutex // guards dig
	dig digest

	commits, refused, merged atomic.Uint64
	busy                     atomic.Int64  // nanoseconds spent committing
	met                      *storeMetrics // nil without metrics
	space                    *diskGuard    // admits each commit (diskspace.go)

	// per commit, reused
	before, after map[string]entry
}

func newCommitter(db *badger.DB, log *slog.Logger, clk *clock, quit, stop <-chan struct{}) *committer {
	return &committer{
		db: db, log: log, clock: clk, quit: quit, stop: stop,
		ops:    make(chan *applyOp, 1024),
		before: make(map[string]entry),
		after:  make(map[string]entry),
	}
}

// submit queues op, waiting while the queue is full. It returns false, without calling
// op.done, when the store is closing.
func (c *committer) submit(op *applyOp) bool {
	select {
	case c.ops <- op:
		return true
	case <-c.quit:
		return false
	}
}

// trySubmit queues op if there is room, without waiting; it reports whether it did.
func (c *committer) trySubmit(op *applyOp) bool {
	select {
	case c.ops <- op:
		return true
	default:
		return false
	}
}

// run commits until stop is closed, then fails what is still queued with ErrClosed.
func (c *committer) run() {
	var batch []*applyOp
	for {
		select {
		case op := <-c.ops:
			batch = append(batch[:0], op)
		case <-c.stop:
			for {
				select {
				case op := <-c.ops:
					op.done(applyResult{err: ErrClosed})
				default:
					return
				}
			}
		}
		n := batch[0].size()
	more:
		for n < maxCommitOps {
			select {
			case op := <-c.ops:
				batch = append(batch, op)
				n += op.size()
			default:
				break more
			}
		}
		c.commit(batch)
		clear(batch)
	}
}

// commit applies ops in one read transaction and one synchronous WriteBatch.
func (c *committer) commit(ops []*applyOp) {
	start := time.Now()
	defer func() {
		took := time.Since(start)
		c.busy.Add(int64(took))
		if c.met != nil {
			records := 0
			for _, op := range ops {
				records += op.size()
			}
			c.met.committed(records, took)
		}
	}()
	if err := c.space.admit(commitBytes(ops)); err != nil {
		c.refuse(ops, err)
		return
	}
	clear(c.before)
	clear(c.after)
	results := make([]applyResult, len(ops))
	if err := c.load(ops); err != nil {
		c.fail(ops, results, fmt.Errorf("remember: read %s: %w", c.db.Opts().Dir, err))
		return
	}
	var maxCounter uint64
	for i, op := range ops {
		res := &results[i]
		switch op.kind {
		case opWrite:
			for j := range op.recs {
				in := &op.recs[j]
				next, need, ok := applyWrite(c.after[in.rec.Key], *in)
				if !ok {
					res.refused = append(res.refused, refusal{index: j, need: need})
					continue
				}
				c.after[in.rec.Key] = next
				maxCounter = max(maxCounter, in.rec.Version.Counter)
			}
			c.refused.Add(uint64(len(res.refused)))
		case opMerge:
			for j := range op.recs {
				in := &op.recs[j]
				cur := c.after[in.rec.Key]
				next := merge(cur, *in)
				if !sameState(&cur, &next) {
					res.changed++
				}
				c.after[in.rec.Key] = next
				maxCounter = max(maxCounter, in.rec.Version.Counter)
			}
			c.merged.Add(uint64(res.changed))
		case opFence:
			res.entries = make([]entry, len(op.keys))
			for j, key := range op.keys {
				next := raiseFloor(c.after[key], op.fences[j])
				c.after[key] = next
				res.entries[j] = next
			}
		}
	}
	c.clock.observe(maxCounter)
	if err := c.store(); err != nil {
		c.fail(ops, results, fmt.Errorf("remember: commit to %s: %w", c.db.Opts().Dir, err))
		c.resync()
		return
	}
	c.commits.Add(1)
	c.mu.Lock()
	for key, next := range c.after {
		old := c.before[key]
		c.dig.update(key, &old, &next)
	}
	c.mu.Unlock()
	for i, op := range ops {
		op.done(results[i])
	}
}

// load reads the current entries of every key ops touch into before and after.
func (c *committer) load(ops []*applyOp) error {
	return c.db.View(func(txn *badger.Txn) error {
		get := func(key string) error {
			if _, ok := c.before[key]; ok {
				return nil
			}
			e, err := getEntry(txn, key, true)
			if err != nil {
				return err
			}
			c.before[key], c.after[key] = e, e
			return nil
		}
		for _, op := range ops {
			for i := range op.recs {
				if err := get(op.recs[i].rec.Key); err != nil {
					return err
				}
			}
			for _, key := range op.keys {
				if err := get(key); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// store writes the entries that changed, each with its summary, and keeps only those in
// after. A commit that fits one Badger transaction (the usual case) is one transaction; a
// larger one goes through a WriteBatch, which splits it. Either way SyncWrites puts it on
// disk before store returns.
func (c *committer) store() error {
	var kvs [][2][]byte
	for key, next := range c.after {
		old := c.before[key]
		if sameState(&old, &next) && bytes.Equal(old.rec.Value, next.rec.Value) {
			delete(c.after, key)
			continue
		}
		kvs = append(kvs, [2][]byte{storeKey(key), encodeEntry(nil, &next)}, [2][]byte{indexKey(key), encodeSummary(nil, &next)})
	}
	if len(kvs) == 0 {
		return nil
	}
	txn := c.db.NewTransaction(true)
	defer txn.Discard()
	for _, kv := range kvs {
		err := txn.Set(kv[0], kv[1])
		if errors.Is(err, badger.ErrTxnTooBig) {
			return c.storeBatch(kvs)
		}
		if err != nil {
			return err
		}
	}
	return txn.Commit()
}

// storeBatch writes kvs through a WriteBatch.
func (c *committer) storeBatch(kvs [][2][]byte) error {
	wb := c.db.NewWriteBatch()
	defer wb.Cancel()
	for _, kv := range kvs {
		if err := wb.Set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// resync re-reads the keys of a failed commit (part of a WriteBatch may be on disk) so that
// the digest matches the disk.
func (c *committer) resync() {
	err := c.db.View(func(txn *badger.Txn) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for key := range c.after {
			now, err := getEntry(txn, key, false)
			if err != nil {
				return err
			}
			old := c.before[key]
			c.dig.update(key, &old, &now)
		}
		return nil
	})
	if err != nil {
		c.log.Error("cannot re-read entries after a failed commit; anti-entropy digests may be off until restart", "err", err)
	}
}

func (c *committer) fail(ops []*applyOp, results []applyResult, err error) {
	c.log.Error("local commit failed", "err", err)
	for i, op := range ops {
		results[i] = applyResult{err: err}
		op.done(results[i])
	}
}

// digestSnapshot returns a copy of the replica's digest.
func (c *committer) digestSnapshot() *digest {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.dig
	return &d
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

// clock is the store's Lamport clock: every write this member makes gets tick(), and every
// counter the store sees is observed, so a write is ordered after every write its member
// has seen (same epoch).
type clock struct{ now atomic.Uint64 }

func (c *clock) tick() uint64 { return c.now.Add(1) }

func (c *clock) observe(v uint64) {
	for {
		cur := c.now.Load()
		if v <= cur || c.now.CompareAndSwap(cur, v) {
			return
		}
	}
}
