package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NextIncarnation reads, increments and durably stores the incarnation counter: every
// process start of this member is a new incarnation, which is how the cluster tells a
// restarted member from the process it replaced. It is synced before it returns, so no two
// processes of a member ever run as the same incarnation.
func (d *Dir) NextIncarnation() (uint64, error) {
	path := d.File(IncarnationFile)
	var n uint64
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		n, err = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is corrupt (%q): %w", path, data, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return 0, err
	}
	n++
	if err := writeFileAtomic(path, []byte(strconv.FormatUint(n, 10)+"\n")); err != nil {
		return 0, fmt.Errorf("store incarnation: %w", err)
	}
	return n, nil
}

// WriteAddrs publishes the addresses others can dial, one per line.
func (d *Dir) WriteAddrs(addrs []string) error {
	return writeFileAtomic(d.File(AddrsFile), []byte(strings.Join(addrs, "\n")+"\n"))
}

// RemoveAddrs removes the addrs file: the member no longer listens.
func (d *Dir) RemoveAddrs() { os.Remove(d.File(AddrsFile)) }

// ReadAddrs reads the addrs file of data directory dir: the addresses of the member that
// runs there (or ran there, when it did not exit cleanly).
func ReadAddrs(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, AddrsFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no %s in %s: is a sharddaemon running with this --data-dir?", AddrsFile, dir)
		}
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

// LastClusterSize reads the size of the last cluster: how many members (not Down or
// Removed) the cluster had the last time this member was Up in it, so that the member's
// next process can ask a forming cluster to wait for a majority of it
// (membership.Node.RestartQuorum) before anything reads the replicated store. 0 when there
// was none.
func (d *Dir) LastClusterSize() (uint32, error) {
	path := d.File(LastClusterFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	size, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 16) // up-numbers, and so clusters, stop at 65,535
	if err != nil {
		return 0, fmt.Errorf("%s is corrupt (%q): remove it to start as a new member (or set cluster.forget-last-cluster=on)", path, data)
	}
	return uint32(size), nil
}

// WriteLastClusterSize stores the size of the cluster, synced.
func (d *Dir) WriteLastClusterSize(size uint32) error {
	return writeFileAtomic(d.File(LastClusterFile), []byte(strconv.FormatUint(uint64(size), 10)+"\n"))
}

// writeFileAtomic writes data to a temporary file, syncs it, renames it over path and syncs
// the directory, so that after a crash path holds the old data or the new, and the new once
// it returned.
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
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
