package datatool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/remember"
)

// Dir is a stopped member's data directory, held while a tool works on it: its lock (so no
// daemon starts on it meanwhile) and its store (Badger's lock).
type Dir struct {
	Path  string
	Store *remember.Local // nil when the directory holds no store yet
	Peer  string          // the member's peer id, from its identity ("" without one)
	Addrs []string        // the addrs file a daemon killed without exiting leaves behind

	dir *datadir.Dir
}

// Open takes the data directory path of a stopped member. It is refused (ErrRefused) while
// a daemon or another tool holds it, and bad input (ErrBadInput) when it is not a member's
// data directory. With needStore, a directory without a store is an error too. A damaged
// store fails with an error wrapping remember.ErrDamaged that names the file.
func Open(path string, needStore bool) (*Dir, error) {
	d, err := Lock(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(d.StorePath(), "MANIFEST")); err != nil {
		if needStore {
			d.Close()
			return nil, fmt.Errorf("%s holds no store (no %s/MANIFEST): is it a member's data directory?", path, datadir.StoreDir)
		}
		return d, nil
	}
	d.Store, err = remember.OpenLocal(d.StorePath())
	if err != nil {
		d.Close()
		switch {
		case errors.Is(err, remember.ErrInUse):
			return nil, refused("refused: the store in %s is in use by another process (a sharddaemon, or another data command): %v", path, err)
		case errors.Is(err, remember.ErrDamaged):
			return nil, fmt.Errorf("%s: %w; 'shardctl data verify --data-dir %s' lists what is damaged, and 'shardctl data rebuild --data-dir %s' moves the store aside so that the member refills it from its peers", path, err, path, path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Lock takes the data directory path of a stopped member, as Open does, without opening
// its store (Store is nil).
func Lock(path string) (*Dir, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, badInput("--data-dir %s: no such directory", path)
	case err != nil:
		return nil, fmt.Errorf("--data-dir %s: %w", path, err)
	case !st.IsDir():
		return nil, badInput("--data-dir %s: not a directory", path)
	}
	dd, err := datadir.OpenStopped(path)
	if inUse := (*datadir.InUseError)(nil); errors.As(err, &inUse) {
		return nil, refused("refused: %s is held by a running sharddaemon (pid %s, from its LOCK file): stop it first; these commands work on stopped members only", path, inUse.PID)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d := &Dir{Path: path, dir: dd}
	if key, err := p2p.LoadIdentity(dd.File(datadir.IdentityFile)); err == nil {
		if id, err := peer.IDFromPrivateKey(key); err == nil {
			d.Peer = id.String()
		}
	}
	if addrs, err := datadir.ReadAddrs(path); err == nil {
		d.Addrs = addrs
	}
	if _, err := os.Stat(filepath.Join(path, "MANIFEST")); err == nil {
		if _, err := os.Stat(d.StorePath()); err != nil {
			d.Close()
			return nil, badInput("--data-dir %s is a store itself: name the member's data directory, %s", path, filepath.Dir(filepath.Clean(path)))
		}
	}
	return d, nil
}

// OpenAll opens every directory, closing those already open when one fails.
func OpenAll(paths []string, needStore bool) ([]*Dir, error) {
	var out []*Dir
	for _, p := range paths {
		d, err := Open(p, needStore)
		if err != nil {
			CloseAll(out)
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// CloseAll closes every directory.
func CloseAll(ds []*Dir) {
	for _, d := range ds {
		d.Close()
	}
}

// StorePath is where the directory keeps its store.
func (d *Dir) StorePath() string { return d.dir.Store() }

// Close releases the store and the directory.
func (d *Dir) Close() {
	if d.Store != nil {
		_ = d.Store.Close()
		d.Store = nil
	}
	d.dir.Close()
}
