package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/remember"
)

// stoppedDir is a stopped member's data directory, held while a data command works on it:
// its LOCK (so no sharddaemon starts on it meanwhile) and its store (Badger's lock).
type stoppedDir struct {
	path  string
	lock  *os.File        // nil when the directory has no LOCK file (no daemon ever ran there)
	store *remember.Local // nil when the directory holds no store yet
	peer  string          // the member's peer id, from identity.key ("" without one)
	addrs []string        // the addrs file a daemon killed without exiting leaves behind
}

// storeDir is where a data directory keeps its store.
func storeDir(dir string) string { return filepath.Join(dir, "store") }

// openStopped takes the data directory dir of a stopped member: refused (exit code 4) when
// a sharddaemon holds it, bad usage (2) when it is not a directory. With needStore, a
// directory without a store is an error too.
func openStopped(dir string, needStore bool) (*stoppedDir, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, usagef("--data-dir %s: no such directory", dir)
	case err != nil:
		return nil, cli.Exit(fmt.Sprintf("--data-dir %s: %v", dir, err), exitFailed)
	case !st.IsDir():
		return nil, usagef("--data-dir %s: not a directory", dir)
	}
	d := &stoppedDir{path: dir}
	if err := d.takeLock(); err != nil {
		return nil, err
	}
	if key, err := p2p.LoadIdentity(filepath.Join(dir, "identity.key")); err == nil {
		if id, err := peer.IDFromPrivateKey(key); err == nil {
			d.peer = id.String()
		}
	}
	if addrs, err := datadir.ReadAddrs(dir); err == nil {
		d.addrs = addrs
	}
	if _, err := os.Stat(filepath.Join(storeDir(dir), "MANIFEST")); err != nil {
		if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
			d.close()
			return nil, usagef("--data-dir %s is a store itself: name the member's data directory, %s", dir, filepath.Dir(filepath.Clean(dir)))
		}
		if needStore {
			d.close()
			return nil, cli.Exit(fmt.Sprintf("%s holds no store (no store/MANIFEST): is it a member's --data-dir?", dir), exitFailed)
		}
		return d, nil
	}
	d.store, err = remember.OpenLocal(storeDir(dir))
	if err != nil {
		d.close()
		if errors.Is(err, remember.ErrInUse) {
			return nil, cli.Exit(fmt.Sprintf("refused: the store in %s is in use by another process (a sharddaemon, or another shardctl data command): %v", dir, err), exitRefused)
		}
		return nil, cli.Exit(fmt.Sprintf("%s: %v", dir, err), exitFailed)
	}
	return d, nil
}

// takeLock takes the daemon's lock of the directory (the flock of DIR/LOCK that a running
// sharddaemon holds), refusing when a daemon holds it.
func (d *stoppedDir) takeLock() error {
	f, err := os.OpenFile(filepath.Join(d.path, "LOCK"), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return cli.Exit(fmt.Sprintf("%s: %v", d.path, err), exitFailed)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(f.Name())
		f.Close()
		pid := strings.TrimSpace(string(holder))
		if pid == "" {
			pid = "unknown"
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return cli.Exit(fmt.Sprintf("refused: %s is held by a running sharddaemon (pid %s, from its LOCK file): stop it first; these commands work on stopped members only", d.path, pid), exitRefused)
		}
		return cli.Exit(fmt.Sprintf("%s: lock: %v", d.path, err), exitFailed)
	}
	d.lock = f
	return nil
}

// name is how messages name the directory: its path and, when known, its member.
func (d *stoppedDir) name() string {
	if d.peer == "" {
		return d.path
	}
	return fmt.Sprintf("%s (member %s)", d.path, shortID(d.peer))
}

func (d *stoppedDir) close() {
	if d.store != nil {
		_ = d.store.Close()
		d.store = nil
	}
	if d.lock != nil {
		_ = syscall.Flock(int(d.lock.Fd()), syscall.LOCK_UN)
		d.lock.Close()
		d.lock = nil
	}
}

// openAllStopped opens every directory, closing those already open when one fails.
func openAllStopped(dirs []string, needStore bool) ([]*stoppedDir, error) {
	var out []*stoppedDir
	for _, dir := range dirs {
		d, err := openStopped(dir, needStore)
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func closeAll(ds []*stoppedDir) {
	for _, d := range ds {
		d.close()
	}
}

// dataDirs returns the --data-dir flags of a data command, checked: at least one, none
// named twice (the second open would find the first holding it); most > 0 caps how many.
func dataDirs(c *cli.Context, most int) ([]string, error) {
	dirs := c.StringSlice("data-dir")
	if len(dirs) == 0 {
		return nil, usagef("%s needs --data-dir DIR (a stopped member's data directory)", c.Command.FullName())
	}
	if most > 0 && len(dirs) > most {
		return nil, usagef("%s takes one --data-dir (got %d)", c.Command.FullName(), len(dirs))
	}
	seen := map[string]string{}
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, usagef("--data-dir %s: %v", dir, err)
		}
		if prev, ok := seen[abs]; ok {
			return nil, usagef("--data-dir %s is named twice (also as %s)", dir, prev)
		}
		seen[abs] = dir
	}
	return dirs, nil
}

// dataDirFlag is --data-dir of the data commands. It does not read $SHARDMESH_DATA_DIR:
// a command that changes a directory acts only on one the command line names.
func dataDirFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{Name: "data-dir", Usage: usage}
}
