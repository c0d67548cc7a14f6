package remember

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// A damaged store: Badger does not check its files before it uses them. A truncated table
// panics in its opening goroutines (a slice out of range: the process exits 2, at every
// start); a table whose index does not check out is skipped with a log line, its records
// gone; a write-ahead memtable that does not read in the middle is replayed up to there and
// the rest dropped; a MANIFEST cut short lists fewer tables, and Badger deletes the ones it
// no longer lists. checkStore reads every file first, and the store does not open while
// any of them is damaged: the member exits naming the file, and its data is refilled from
// the other members after `shardctl data rebuild`.

// ErrDamaged says a file of the store does not read as Badger wrote it (truncated, garbled,
// missing). The error is a *DamageError naming the files.
var ErrDamaged = errors.New("store damaged")

// Damage is one damaged file of a store directory.
type Damage struct {
	File    string `json:"file"`    // the file's name in the store directory ("000003.sst", "MANIFEST")
	Problem string `json:"problem"` // what is wrong with it
}

// DamageError is the ErrDamaged of a store directory: every damaged file found.
type DamageError struct {
	Dir   string
	Files []Damage // at least one
}

func (e *DamageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remember: %v: %s: %s", ErrDamaged, filepath.Join(e.Dir, e.Files[0].File), oneLine(e.Files[0].Problem))
	if n := len(e.Files) - 1; n > 0 {
		names := make([]string, 0, n)
		for _, d := range e.Files[1:] {
			names = append(names, d.File)
		}
		fmt.Fprintf(&b, " (and %d more: %s)", n, strings.Join(names, ", "))
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrDamaged) hold.
func (e *DamageError) Unwrap() error { return ErrDamaged }

// Verified is what a check of a stopped store found (VerifyDir).
type Verified struct {
	Dir        string   `json:"dir"`
	Tables     int      `json:"tables"`      // tables the MANIFEST lists
	TableBytes int64    `json:"table_bytes"` // their size
	Logs       int      `json:"logs"`        // write-ahead memtables and value log files
	LogBytes   int64    `json:"log_bytes"`   // bytes of entries in the write-ahead memtables (what opening flushes)
	Damaged    []Damage `json:"damaged"`     // empty when the store is sound
}

// VerifyDir checks every file of the stopped store in dir — the MANIFEST, every table
// block by block, the write-ahead memtables and value logs entry by entry — without opening
// it, and lists what is damaged. It fails (rather than listing damage) only when the files
// cannot be read at all; a directory without a store yields nothing to check.
func VerifyDir(dir string) (Verified, error) {
	c, err := checkStore(badgerOptions(dir, slog.New(slog.DiscardHandler), nil), true)
	if err != nil {
		return Verified{Dir: dir, Damaged: []Damage{}}, err
	}
	return Verified{Dir: dir, Tables: c.tables, TableBytes: c.tableBytes, Logs: c.logs, LogBytes: c.walBytes, Damaged: append([]Damage{}, c.damage...)}, nil
}

// storeCheck is a check of a store directory's files.
type storeCheck struct {
	dir  string
	opt  badger.Options
	full bool // every block of every table, not only their indexes

	damage     []Damage
	tables     int
	tableBytes int64
	logs       int
	walBytes   int64
}

func (c *storeCheck) damaged(file, format string, args ...any) {
	c.damage = append(c.damage, Damage{File: file, Problem: fmt.Sprintf(format, args...)})
}

// err is the check's verdict: nil, or a *DamageError.
func (c *storeCheck) err() error {
	if len(c.damage) == 0 {
		return nil
	}
	return &DamageError{Dir: c.dir, Files: c.damage}
}

// checkStore checks the files of the store directory opt.Dir (see VerifyDir). Damage is
// listed in the result; the error is for a directory that cannot be read.
func checkStore(opt badger.Options, full bool) (*storeCheck, error) {
	c := &storeCheck{dir: opt.Dir, opt: opt, full: full}
	entries, err := os.ReadDir(c.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remember: check the store in %s: %w", c.dir, err)
	}
	var sst, mem, vlog []string
	has := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		has[name] = true
		switch filepath.Ext(name) {
		case ".sst":
			sst = append(sst, name)
		case ".mem":
			mem = append(mem, name)
		case ".vlog":
			vlog = append(vlog, name)
		}
	}
	if !has["MANIFEST"] {
		if len(sst)+len(mem) > 0 {
			c.damaged("MANIFEST", "missing, while the directory holds %d tables and %d write-ahead memtables: Badger would start an empty store and delete the tables", len(sst), len(mem))
		}
		return c, nil
	}
	if has["KEYREGISTRY"] && len(opt.EncryptionKey) == 0 {
		c.checkKeyRegistry()
	}
	var walMinTs uint64
	for _, name := range mem {
		s, ok := c.checkLog(name, 2*opt.MemTableSize)
		if ok && s.minTs != 0 && (walMinTs == 0 || s.minTs < walMinTs) {
			walMinTs = s.minTs
		}
		c.walBytes += int64(max(s.validEnd-logHeaderSize, 0))
	}
	for _, name := range vlog {
		c.checkLog(name, 2*opt.ValueLogFileSize)
	}
	c.logs = len(mem) + len(vlog)
	mf, ok := c.checkManifest()
	if !ok {
		return c, nil
	}
	var listedMax uint64
	for id, tm := range mf.Tables {
		name := table.IDToFilename(id)
		if !has[name] {
			c.damaged(name, "missing: the MANIFEST lists it (level %d)", tm.Level)
			continue
		}
		t, size, err := c.openTable(name, tm.Compression, full)
		if err != nil {
			c.damaged(name, "does not read (truncated or garbled): %v", err)
			continue
		}
		c.tables++
		c.tableBytes += size
		listedMax = max(listedMax, t.MaxVersion())
		_ = t.Close(-1)
	}
	for _, name := range sst {
		id, ok := table.ParseFileID(name)
		if _, listed := mf.Tables[id]; !ok || listed {
			continue
		}
		c.checkUnlisted(name, listedMax, walMinTs)
	}
	slices.SortFunc(c.damage, func(a, b Damage) int { return strings.Compare(a.File, b.File) })
	return c, nil
}

// checkKeyRegistry checks the registry of encryption keys of a store without encryption:
// an IV, the sanity text, nothing else.
func (c *storeCheck) checkKeyRegistry() {
	data, err := os.ReadFile(filepath.Join(c.dir, "KEYREGISTRY"))
	switch {
	case err != nil:
		c.damaged("KEYREGISTRY", "does not read: %v", err)
	case len(data) != 16+len("Hello Badger") || !bytes.Equal(data[16:], []byte("Hello Badger")):
		c.damaged("KEYREGISTRY", "garbled or truncated (%d bytes; a store without encryption keeps 28: an IV and \"Hello Badger\")", len(data))
	}
}

// checkManifest replays the MANIFEST as Badger does; false when it does not replay. A
// record cut short at its end (a crash while appending) is not damage: Badger drops it,
// and checkUnlisted tells whether that lost anything.
func (c *storeCheck) checkManifest() (badger.Manifest, bool) {
	f, err := os.Open(filepath.Join(c.dir, "MANIFEST"))
	if err != nil {
		c.damaged("MANIFEST", "does not read: %v", err)
		return badger.Manifest{}, false
	}
	defer f.Close()
	var mf badger.Manifest
	err = guard(func() error {
		var err error
		mf, _, err = badger.ReplayManifestFile(f, c.opt.ExternalMagicVersion, c.opt)
		return err
	})
	if err != nil {
		c.damaged("MANIFEST", "garbled: %v", err)
		return badger.Manifest{}, false
	}
	return mf, true
}

// openTable opens a table read-only; with full, every block's checksum is verified.
func (c *storeCheck) openTable(name string, comp options.CompressionType, full bool) (*table.Table, int64, error) {
	path := filepath.Join(c.dir, name)
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if st.Size() == 0 {
		return nil, 0, errors.New("empty")
	}
	var t *table.Table
	err = guard(func() error {
		mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		mode := options.NoVerification
		if full {
			mode = options.OnTableRead
		}
		t, err = table.OpenTable(mf, table.Options{ReadOnly: true, ChkMode: mode, BlockSize: c.opt.BlockSize,
			BloomFalsePositive: c.opt.BloomFalsePositive, Compression: comp, ZSTDCompressionLevel: c.opt.ZSTDCompressionLevel})
		if err != nil {
			_ = mf.Close(-1)
		}
		return err
	})
	return t, st.Size(), err
}

// checkUnlisted tells a table the MANIFEST does not list from one whose records exist
// nowhere else. Badger deletes unlisted tables when it opens. Normally they are the output
// of a flush or a compaction that a crash interrupted before its MANIFEST record: their
// records are in a listed table (a compaction's inputs, so no newer version than the
// listed tables hold) or in a write-ahead memtable (a flush's, so no older version than the
// logs hold). A table that is neither holds writes the MANIFEST has lost.
func (c *storeCheck) checkUnlisted(name string, listedMax, walMinTs uint64) {
	t, _, err := c.openTable(name, c.opt.Compression, false)
	if err != nil {
		return // half written when the process died: Badger deletes it, nothing is lost
	}
	defer func() { _ = t.Close(-1) }()
	if t.MaxVersion() <= listedMax {
		return
	}
	var minTs uint64
	err = guard(func() error {
		it := t.NewIterator(0)
		defer func() { _ = it.Close() }()
		for it.Rewind(); it.Valid(); it.Next() {
			if ts := logTs(it.Key()); minTs == 0 || ts < minTs {
				minTs = ts
			}
		}
		return nil
	})
	if err == nil && walMinTs != 0 && minTs >= walMinTs {
		return
	}
	c.damaged("MANIFEST", "does not list %s, which holds writes (versions up to %d) that no listed table or write-ahead memtable holds: the MANIFEST lost records (truncated, or replaced by an older one)", name, t.MaxVersion())
}

// checkLog checks a write-ahead memtable or value log file, whose size when Badger creates
// it is created (it is truncated to its entries when Badger is done with it). ok is false
// when it is damaged.
func (c *storeCheck) checkLog(name string, created int64) (logScan, bool) {
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		c.damaged(name, "does not read: %v", err)
		return logScan{}, false
	}
	switch {
	case len(data) == 0:
		c.damaged(name, "empty (a crash while Badger created it, or truncated): Badger cannot open it; if it was created last, it holds nothing and deleting it is enough")
		return logScan{}, false
	case len(data) < logHeaderSize:
		c.damaged(name, "truncated: %d bytes, shorter than the %d-byte header", len(data), logHeaderSize)
		return logScan{}, false
	}
	s := scanLog(data)
	switch {
	case s.keyID != 0 && len(c.opt.EncryptionKey) == 0:
		c.damaged(name, "garbled header: encryption key id %d in a store without encryption", s.keyID)
	case s.lost > 0:
		c.damaged(name, "garbled at offset %d: %d committed entries after it, from offset %d on, would be dropped", s.parsedEnd, s.lost, s.lostAt)
	case int64(len(data)) != created && s.parsedEnd != len(data):
		c.damaged(name, "truncated or garbled at offset %d of %d: the entries stop there, in a file Badger had finished (its size is not the %d it creates files with)", s.parsedEnd, len(data), created)
	default:
		return s, true
	}
	return s, false
}

// guard runs fn and turns a panic in it into an error: Badger panics on some damaged
// files (slice bounds on a truncated table).
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the database fails reading it (%s)", oneLine(fmt.Sprint(r)))
		}
	}()
	return fn()
}

// recovered turns a panic of Badger in the caller's goroutine into an error naming the
// store: the offline tools report a store that breaks under them instead of crashing.
// Call it deferred, with the function's named error.
func recovered(dir string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	*err = fmt.Errorf("remember: %w: reading %s failed inside the database (%s); run 'shardctl data verify' on its data directory to find the damaged file",
		ErrDamaged, dir, oneLine(fmt.Sprint(r)))
}

// checkBeforeOpen checks a store directory before Badger opens it, under Badger's own
// lock: its files (a *DamageError), and room for the write-ahead log that opening flushes
// (a *DiskFullError; reserve is Config.MinFreeSpace). A check that takes long (a large
// store: it reads every table) is logged.
func checkBeforeOpen(opt badger.Options, reserve int64, log *slog.Logger) error {
	unlock, err := lockDir(opt.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	start := time.Now()
	c, err := checkStore(opt, true)
	if err != nil {
		return err
	}
	if took := time.Since(start); took > time.Second {
		log.Info("checked the store's files before opening it", "dir", opt.Dir, "tables", c.tables, "table_bytes", c.tableBytes, "took", took.Round(time.Millisecond).String())
	}
	if err := c.err(); err != nil {
		return err
	}
	return newDiskGuard(opt.Dir, reserve, opt, nil).openRoom(c.walBytes)
}

// oneLine squeezes a message (a panic's, which may span lines) onto one line of at most
// 300 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
