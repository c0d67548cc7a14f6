package remember

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// statFS returns the bytes free for an unprivileged user (root may dig into the file
// system's own reserve, but a full disk is where the reserve is meant to keep us off) and
// the size of the file system that holds dir.
func statFS(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// preallocate gives every block of the file at path (up to its size) from the file system
// now, without changing its contents: later writes through a memory map then need no new
// block.
func preallocate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return nil
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, st.Size())
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("%w: %v", errNoPreallocation, err)
	}
	if err != nil {
		return fmt.Errorf("preallocate %s: %w", path, err)
	}
	return nil
}

// lockDir takes Badger's lock of a store directory (an exclusive flock of DIR/LOCK, as
// Badger takes it) for a look at its files before Badger opens it; the lock is given back
// before Badger takes it. A directory another process holds fails with ErrInUse.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("remember: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, inUse(dir)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
