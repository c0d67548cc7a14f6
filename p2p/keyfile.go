package p2p

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// readKeyFile reads a secret file after checking that neither group nor others can read
// or write it. With rootGroupRead, a file owned by root may also be readable by its group
// (0640, 0440), as PostgreSQL allows for its key file: that is how a Kubernetes Secret
// reaches a non-root container (owned by root, group fsGroup, mode 0440), and only root
// and that group can read it.
func readKeyFile(path, what string, rootGroupRead bool) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, keyFileError{fmt.Errorf("%s file %s: %w", what, path, unwrapPathError(err))}
	}
	if !info.Mode().IsRegular() {
		return nil, keyFileError{fmt.Errorf("%s file %s is not a regular file", what, path)}
	}
	allowed := fs.FileMode(0o700)
	if st, ok := info.Sys().(*syscall.Stat_t); ok && rootGroupRead && st.Uid == 0 {
		allowed = 0o740
	}
	if perm := info.Mode().Perm(); perm&^allowed != 0 {
		return nil, fmt.Errorf("%s file %s has mode %04o: %w; fix with: chmod 600 %s",
			what, path, perm, ErrInsecureKeyFile, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, keyFileError{fmt.Errorf("%s file %s: %w", what, path, unwrapPathError(err))}
	}
	return data, nil
}

// keyFileError is a problem with a key file: errors.Is(err, ErrKeyFile), with its own text.
type keyFileError struct{ err error }

func (e keyFileError) Error() string        { return e.err.Error() }
func (e keyFileError) Unwrap() error        { return e.err }
func (e keyFileError) Is(target error) bool { return target == ErrKeyFile }

// unwrapPathError drops the operation and path of an *fs.PathError ("stat /x: no such
// file") when the message names the path already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// createKeyFile writes data to a new file at path with mode 0600 and fails with an error
// wrapping fs.ErrExist if path exists. The content is written to a temporary file in the
// same directory, synced, then linked into place, so that path never holds a partial key
// and two processes racing to create it cannot both win. Missing parent directories are
// created with mode 0700.
func createKeyFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists: %w", path, fs.ErrExist)
		}
		return err
	}
	return nil
}
