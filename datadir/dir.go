package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Files and directories in a member's data directory.
const (
	LockFile        = "LOCK"              // flock held while a daemon (or a data command) works on the directory; a daemon writes its pid in it
	IdentityFile    = "identity.key"      // the Ed25519 key: the member's peer id (p2p.LoadOrCreateIdentity)
	CredentialFile  = "member.credential" // the member credential of a cluster authority (shardctl credential member), if any
	IncarnationFile = "incarnation"       // process starts so far
	AddrsFile       = "addrs"             // dialable multiaddrs, one per line, written once listening, removed at a clean exit
	LastClusterFile = "last-cluster-size" // members of the last cluster this member was Up in
	MetricsAddrFile = "metrics-addr"      // host:port the daemon serves metrics on (sharddaemon --metrics-listen), removed at exit
	StoreDir        = "store"             // the member's replica of the replicated store (Badger)
	BackupsDir      = "backups"           // backups the data commands take before they change the store
	RefillFile      = "store-refill"      // present while the store refills from its peers (why, inside); removed once it holds what they hold
	DamagedPrefix   = "store.damaged-"    // a damaged store moved aside (kept) as store.damaged-<time>
	LayoutFile      = "store-layout"      // the layout of the store's keys (StoreLayoutVersion); absent in stores from before replica sets
	MetaSeedFile    = "metadata-seed"     // present while the store's metadata is in no metadata group yet (why, inside): restored, or from a release before the group
)

// MarkMetaSeed writes MetaSeedFile in data directory dir: the metadata of its store is in
// no metadata group (why says how it came), so the daemon merges it into the group (and
// founds the group with it as the oldest voter, when there is none), then removes the file.
func MarkMetaSeed(dir, why string) error {
	path := filepath.Join(dir, MetaSeedFile)
	if err := os.WriteFile(path, []byte(why+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// StoreLayoutVersion is the layout of the store's keys this release writes: 2, entity state
// under its shard (st␀TYPE␀SHARD␀ENTITY). Stores without a LayoutFile hold layout 1
// (st␀TYPE␀ENTITY), which node moves to 2 when it opens them.
const StoreLayoutVersion = 2

// ErrInUse is returned (wrapped in an *InUseError) when another process holds a data
// directory.
var ErrInUse = errors.New("data directory in use")

// InUseError says that another process holds data directory Dir.
type InUseError struct {
	Dir string
	// PID is the holder's process id as the last daemon there wrote it in the lock file, or
	// "unknown".
	PID string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s is held by another process (pid %s)", e.Dir, e.PID)
}

func (e *InUseError) Unwrap() error { return ErrInUse }

// Dir is a member's data directory, held by this process: the flock of its lock file keeps
// every other daemon and data command out until Close.
type Dir struct {
	path string
	lock *os.File // nil: OpenStopped found no lock file
}

// Open takes dir for the member that runs in it: creates it if needed, takes its lock and
// writes this process's id into the lock file, so two daemons can never share one identity
// and one store.
func Open(dir string) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("no data directory: set --data-dir")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data directory lock: %w", err)
	}
	if err := flock(dir, f); err != nil {
		return nil, err
	}
	// The pid is only a hint for the error message of a second process; failing to write it
	// is harmless.
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
		_ = f.Sync()
	}
	return &Dir{path: dir, lock: f}, nil
}

// OpenStopped takes the data directory of a stopped member for a tool that works on it:
// its lock, so that no daemon starts on it meanwhile, when a daemon ever ran there (a lock
// file exists). It creates and writes nothing. dir must exist.
func OpenStopped(dir string) (*Dir, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return &Dir{path: dir}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := flock(dir, f); err != nil {
		return nil, err
	}
	return &Dir{path: dir, lock: f}, nil
}

// flock takes the lock of dir on its open lock file f, closing f when it cannot.
func flock(dir string, f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return nil
	}
	holder, _ := os.ReadFile(f.Name())
	f.Close()
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%s: lock: %w", dir, err)
	}
	pid := strings.TrimSpace(string(holder))
	if pid == "" {
		pid = "unknown"
	}
	return &InUseError{Dir: dir, PID: pid}
}

// Path is the directory's path as it was opened.
func (d *Dir) Path() string { return d.path }

// File returns the path of name (one of the file constants) in the directory.
func (d *Dir) File(name string) string { return filepath.Join(d.path, name) }

// Store returns the path of the store's directory.
func (d *Dir) Store() string { return StorePath(d.path) }

// StorePath returns the path of the store's directory in data directory dir.
func StorePath(dir string) string { return filepath.Join(dir, StoreDir) }

// Close releases the directory.
func (d *Dir) Close() {
	if d.lock == nil {
		return
	}
	_ = syscall.Flock(int(d.lock.Fd()), syscall.LOCK_UN) // closing releases it anyway
	d.lock.Close()
	d.lock = nil
}
