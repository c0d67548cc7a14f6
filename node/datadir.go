package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Files in a member's data directory.
const (
	lockFile        = "LOCK"         // flock held while a daemon runs; holds its pid
	identityFile    = "identity.key" // Ed25519 key: the member's peer id
	incarnationFile = "incarnation"  // process starts so far
	addrsFile       = "addrs"        // dialable multiaddrs, one per line, written once listening
)

// ErrDataDirInUse is returned when another process holds the data directory.
var ErrDataDirInUse = errors.New("data directory in use")

// dataDir is a locked member data directory.
type dataDir struct {
	path string
	lock *os.File
}

// openDataDir creates dir if needed and takes its lock, so two daemons can never share one
// identity and one store.
func openDataDir(dir string) (*dataDir, error) {
	if dir == "" {
		return nil, errors.New("no data directory: set --data-dir")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(f.Name())
		f.Close()
		pid := strings.TrimSpace(string(holder))
		if pid == "" {
			pid = "unknown"
		}
		return nil, fmt.Errorf("%w: %s is held by another sharddaemon (pid %s); stop it or use another --data-dir", ErrDataDirInUse, dir, pid)
	}
	// The pid is only a hint for the error message of a second daemon; failing to write it
	// is harmless.
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
		_ = f.Sync()
	}
	return &dataDir{path: dir, lock: f}, nil
}

func (d *dataDir) file(name string) string { return filepath.Join(d.path, name) }

// nextIncarnation reads, increments and durably stores the incarnation counter: every
// process start of this member is a new incarnation, which is how the cluster tells a
// restarted member from the process it replaced.
func (d *dataDir) nextIncarnation() (uint64, error) {
	var n uint64
	data, err := os.ReadFile(d.file(incarnationFile))
	switch {
	case err == nil:
		n, err = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is corrupt (%q): %w", d.file(incarnationFile), data, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return 0, err
	}
	n++
	if err := writeFileAtomic(d.file(incarnationFile), []byte(strconv.FormatUint(n, 10)+"\n")); err != nil {
		return 0, fmt.Errorf("store incarnation: %w", err)
	}
	return n, nil
}

// writeAddrs publishes the addresses others can dial, one per line.
func (d *dataDir) writeAddrs(addrs []string) error {
	return writeFileAtomic(d.file(addrsFile), []byte(strings.Join(addrs, "\n")+"\n"))
}

func (d *dataDir) close() {
	os.Remove(d.file(addrsFile))
	_ = syscall.Flock(int(d.lock.Fd()), syscall.LOCK_UN) // closing releases it anyway
	d.lock.Close()
}

// writeFileAtomic writes data to a temporary file, syncs it and renames it over path.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadAddrs reads the addrs file of a running member's data directory.
func ReadAddrs(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, addrsFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no %s in %s: is a sharddaemon running with this --data-dir?", addrsFile, dir)
		}
		return nil, err
	}
	return strings.Fields(string(data)), nil
}
