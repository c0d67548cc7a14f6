//go:build !linux

package remember

import "errors"

// statFS is not implemented here: the reserve is not enforced.
func statFS(string) (free, total uint64, err error) {
	return 0, 0, errors.New("free space is not measured on this platform")
}

// preallocate is not implemented here.
func preallocate(string) error { return errNoPreallocation }

// lockDir does not lock here: Badger's own lock, taken when it opens, is the only one.
func lockDir(string) (func(), error) { return func() {}, nil }
