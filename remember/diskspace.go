package remember

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh/config/value"
)

// A full disk: Badger writes its write-ahead memtable (the .mem files) and its value log
// through memory maps of sparse files, so a write that needs a new block on a full file
// system does not fail — the process dies of SIGBUS, and again at every restart while the
// disk stays full (its flushes and compactions write tables the same way). The store
// therefore never lets Badger meet a full disk:
//
//   - it keeps a reserve of free space (Config.MinFreeSpace): before every local commit it
//     asks the file system (statfs, about 1 µs) and refuses the commit, with a
//     *DiskFullError, when it would leave less than the reserve. The reserve is what Badger
//     may still write on its own: memtables flushed, a compaction, the next log;
//   - it preallocates every write-ahead memtable file as soon as it appears (fallocate), so
//     the commits that fill it write into blocks the file system has already handed out,
//     whatever else takes the free space meanwhile;
//   - it watches the free space every diskCheckInterval, so that the member reports the
//     state (Store.Space, metrics) and writes resume by themselves once space is back above
//     the reserve (plus an eighth of it, so a disk at the edge does not flap);
//   - it does not open a store whose write-ahead log it could not flush (openRoom), and does
//     not flush at Close on a full disk: the synced log is replayed at the next open.

// ErrDiskFull says the store's file system has less free space than Config.MinFreeSpace; writes
// to this replica are refused until space is freed. The error is a *DiskFullError.
var ErrDiskFull = errors.New("disk full")

// DiskFullError is the ErrDiskFull of a write refused by this replica, or of a store that
// cannot open for want of space.
type DiskFullError struct {
	Dir     string // the store's directory
	Free    uint64 // bytes free on its file system (for the store's user)
	Reserve uint64 // the reserve kept free (Config.MinFreeSpace)
	Need    uint64 // bytes the refused operation needed on top of the reserve
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("remember: %v: %s has %s free, which does not leave the reserve of %s (store.min-free-space) for %s more: writes to this replica are refused until space is freed on that file system",
		ErrDiskFull, e.Dir, value.FormatSize(e.Free), value.FormatSize(e.Reserve), value.FormatSize(e.Need))
}

// Unwrap makes errors.Is(err, ErrDiskFull) hold.
func (e *DiskFullError) Unwrap() error { return ErrDiskFull }

// DefaultMinFreeSpace is Config.MinFreeSpace's default.
const DefaultMinFreeSpace = 256 << 20

// NoMinFreeSpace is the Config.MinFreeSpace that keeps no reserve.
const NoMinFreeSpace = -1

// diskCheckInterval is how often the store looks at its free space between commits.
const diskCheckInterval = time.Second

// commitOverhead is what Badger writes per record beyond its key and value (the entry
// header and checksum in the log, the key's version, the summary's key).
const commitOverhead = 64

// Space is the store's file system as the last look found it.
type Space struct {
	Dir     string
	Free    uint64    // bytes free for the store's user
	Total   uint64    // bytes of the file system
	Reserve uint64    // kept free (Config.MinFreeSpace; 0: none)
	Full    bool      // below the reserve: this replica refuses writes
	Since   time.Time // when it became full
	Refused uint64    // local commits refused for want of space since the store opened
	Err     error     // the file system could not be asked
}

// Space returns the state of the store's file system.
func (s *Store) Space() Space { return s.space.state() }

// diskGuard keeps the reserve of free space for one store directory (see the top of this
// file). Its methods are safe for concurrent use.
type diskGuard struct {
	dir     string
	reserve uint64 // 0: no reserve
	walSize int64  // the size Badger gives a new write-ahead memtable file
	log     *slog.Logger
	statfs  func(dir string) (free, total uint64, err error)
	alloc   func(path string) error // preallocates a file's blocks

	mu        sync.Mutex
	cur       Space
	walsDue   int64           // bytes admitted since the write-ahead logs were last preallocated
	allocated map[string]bool // write-ahead memtable files preallocated
	allocOff  bool            // the file system cannot preallocate

	refused atomic.Uint64
}

func newDiskGuard(dir string, reserve int64, opt badger.Options, log *slog.Logger) *diskGuard {
	g := &diskGuard{dir: dir, walSize: 2 * opt.MemTableSize, log: log, statfs: statFS, alloc: preallocate, allocated: map[string]bool{}}
	if reserve > 0 {
		g.reserve = uint64(reserve)
	}
	g.cur = Space{Dir: dir, Reserve: g.reserve}
	return g
}

// admit is asked before a local commit of about n bytes: nil, or a *DiskFullError when the
// commit would leave less than the reserve. It preallocates the write-ahead logs Badger
// has started since it last did (one appears every walSize/2 bytes or so).
func (g *diskGuard) admit(n int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.walsDue += int64(n)
	if g.walsDue >= g.walSize/8 {
		g.walsDue = 0
		g.preallocateWALs()
	}
	if g.reserve == 0 {
		return nil
	}
	g.look(uint64(n))
	if !g.cur.Full {
		return nil
	}
	g.refused.Add(1)
	return &DiskFullError{Dir: g.dir, Free: g.cur.Free, Reserve: g.reserve, Need: uint64(n)}
}

// check looks at the free space and preallocates new write-ahead logs: the periodic check.
func (g *diskGuard) check() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.preallocateWALs()
	g.look(0)
}

// look asks the file system and updates the state (g.mu held), for a commit of need bytes:
// full when the commit would leave less than the reserve; full until the free space is back
// above the reserve plus an eighth of it.
func (g *diskGuard) look(need uint64) {
	free, total, err := g.statfs(g.dir)
	if err != nil {
		if g.cur.Err == nil {
			g.log.Warn("cannot ask the file system for its free space; the reserve (store.min-free-space) is not enforced until it answers", "dir", g.dir, "err", err)
		}
		g.cur.Err = err
		return
	}
	g.cur.Err, g.cur.Free, g.cur.Total = nil, free, total
	if g.reserve == 0 {
		return
	}
	switch {
	case !g.cur.Full && free < g.reserve+need:
		g.cur.Full, g.cur.Since = true, time.Now()
		g.log.Warn("disk full: the store refuses writes until space is freed on its file system (free space there, or grow it); reads go on",
			"dir", g.dir, "free", value.FormatSize(free), "min_free_space", value.FormatSize(g.reserve), "commit", value.FormatSize(need))
	case g.cur.Full && free >= g.reserve+g.reserve/8+need:
		g.log.Info("disk space is back: the store accepts writes again", "dir", g.dir, "free", value.FormatSize(free),
			"min_free_space", value.FormatSize(g.reserve), "full_for", time.Since(g.cur.Since).Round(time.Millisecond).String(), "refused_commits", g.refused.Load())
		g.cur.Full, g.cur.Since = false, time.Time{}
	}
}

// preallocateWALs gives every write-ahead memtable file in the directory its blocks (g.mu
// held). A file the file system cannot give them to makes the store full: writing it would
// fault.
func (g *diskGuard) preallocateWALs() {
	if g.allocOff {
		return
	}
	matches, err := filepath.Glob(filepath.Join(g.dir, "*.mem"))
	if err != nil {
		return
	}
	seen := make(map[string]bool, len(matches))
	for _, path := range matches {
		seen[path] = true
		if g.allocated[path] {
			continue
		}
		err := g.alloc(path)
		switch {
		case err == nil:
			g.allocated[path] = true
		case errors.Is(err, errNoPreallocation):
			g.allocOff = true
			g.log.Debug("the file system cannot preallocate; the reserve alone keeps the store's memory-mapped writes safe", "dir", g.dir, "err", err)
			return
		case errors.Is(err, os.ErrNotExist): // flushed and deleted meanwhile
		case g.reserve > 0:
			if !g.cur.Full {
				g.cur.Full, g.cur.Since = true, time.Now()
			}
			g.log.Warn("cannot preallocate the store's write-ahead log; writes are refused until space is freed", "file", path, "err", err)
		default:
			g.log.Warn("cannot preallocate the store's write-ahead log (no reserve kept: store.min-free-space is off)", "file", path, "err", err)
		}
	}
	for path := range g.allocated {
		if !seen[path] {
			delete(g.allocated, path)
		}
	}
}

func (g *diskGuard) state() Space {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.cur
	s.Refused = g.refused.Load()
	return s
}

// openRoom checks, before Badger opens dir, that the file system can take what opening
// writes: the tables its write-ahead logs are flushed into (walBytes in all). Without the
// reserve nothing is checked.
func (g *diskGuard) openRoom(walBytes int64) error {
	if g.reserve == 0 || walBytes == 0 {
		return nil
	}
	free, _, err := g.statfs(g.dir)
	if err != nil || free >= uint64(walBytes)+uint64(walBytes)/2 {
		return nil
	}
	return fmt.Errorf("remember: cannot open the store in %s: its write-ahead log (%s) is flushed into tables when it opens, and the file system has only %s free: %w",
		g.dir, value.FormatSize(uint64(walBytes)), value.FormatSize(free), &DiskFullError{Dir: g.dir, Free: free, Reserve: g.reserve, Need: uint64(walBytes)})
}

// closeRoom reports whether Badger may flush its memtable at Close: not on a full disk,
// where the flush could fault; the synced write-ahead log is replayed at the next open
// instead.
func (g *diskGuard) closeRoom() bool {
	if g.reserve == 0 {
		return true
	}
	free, _, err := g.statfs(g.dir)
	return err != nil || free >= uint64(g.walSize)
}

// commitBytes estimates what a commit of ops writes.
func commitBytes(ops []DiskOp) int {
	n := 0
	for i := range ops {
		for j := range ops[i].apply {
			op := &ops[i].apply[j]
			for k := range op.recs {
				n += 2*len(op.recs[k].rec.Key) + len(op.recs[k].rec.Value) + commitOverhead
			}
			for _, key := range op.keys {
				n += 2*len(key) + commitOverhead
			}
		}
	}
	return n
}

// errNoPreallocation: the file system does not preallocate.
var errNoPreallocation = errors.New("preallocation not supported")

// watchSpace looks at the free space every diskCheckInterval until the store closes.
func (s *Store) watchSpace() {
	s.space.check()
	t := time.NewTicker(diskCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.space.check()
		}
	}
}

// closeDB closes the database, unless the disk is too full for the flush of its memtable
// that closing does: then the database is left to the process's exit, and its synced
// write-ahead log is replayed at the next open.
func (s *Store) closeDB() error {
	if !s.space.closeRoom() {
		s.log.Warn("disk full: not flushing the store's memtable at close (it could not be written); its write-ahead log is replayed at the next start", "dir", s.cfg.Dir)
		return nil
	}
	return s.db.Close()
}

// faultMetrics are the gauges of the store's file system and refill.
func faultMetrics(s *Store) []prometheus.Collector {
	gauge := func(name, help string, v func(Space) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(s.Space()) })
	}
	return []prometheus.Collector{
		gauge("shardmesh_store_free_bytes", "Bytes free on the store's file system, as last measured (every second and at every commit).", func(sp Space) float64 { return float64(sp.Free) }),
		gauge("shardmesh_store_min_free_bytes", "The reserve of free space the store keeps (store.min-free-space; 0: none).", func(sp Space) float64 { return float64(sp.Reserve) }),
		gauge("shardmesh_store_disk_full", "1 while the store refuses writes for want of free space (below store.min-free-space), else 0.", func(sp Space) float64 { return boolGauge(sp.Full) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "shardmesh_store_disk_full_refusals_total", Help: "Local commits the store refused for want of free space."},
			func() float64 { return float64(s.space.refused.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shardmesh_store_refilling", Help: "1 while this replica refills from its peers (after a rebuild, or found holding far fewer keys): its answers do not count in reads."},
			func() float64 { return boolGauge(s.Refill().Active) }),
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
