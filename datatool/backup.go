package datatool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/remember"
)

// Backup writes a full backup of d's store to w, in Badger's backup format.
func Backup(d *Dir, w io.Writer) error {
	if d.Store == nil {
		return fmt.Errorf("%s holds no store", d.Path)
	}
	_, err := d.Store.Backup(w)
	return err
}

// BackupFile writes a full backup of d's store to path, which must not exist yet (else
// ErrBadInput), through a temporary file that is synced and renamed, and returns its size
// in bytes.
func BackupFile(d *Dir, path string) (int64, error) {
	if _, err := os.Stat(path); err == nil {
		return 0, badInput("backup file %s exists already; not overwriting it", path)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("back up %s: %w", d.Path, err)
	}
	fail := func(err error) (int64, error) {
		f.Close()
		os.Remove(tmp)
		return 0, fmt.Errorf("back up %s to %s: %w", d.Path, path, err)
	}
	if err := Backup(d, f); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("back up %s: %w", d.Path, err)
	}
	return st.Size(), nil
}

// Stamp names files by the time they were made, in UTC.
func Stamp(t time.Time) string { return t.UTC().Format("20060102T150405Z") }

// DefaultBackupPath is where a removal backs up d's store unless told otherwise:
// DIR/backups/store-<time>.backup, or in backupDir (when set) named after DIR. It creates
// the directory and picks a name no file has yet.
func DefaultBackupPath(d *Dir, backupDir string, now time.Time) (string, error) {
	dir := filepath.Join(d.Path, datadir.BackupsDir)
	name := "store-" + Stamp(now) + ".backup"
	if backupDir != "" {
		dir = backupDir
		name = filepath.Base(filepath.Clean(d.Path)) + "-" + name
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backup directory: %w", err)
	}
	path := filepath.Join(dir, name)
	for i := 2; ; i++ { // two removals within a second
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		path = filepath.Join(dir, strings.TrimSuffix(name, ".backup")+"-"+strconv.Itoa(i)+".backup")
	}
}

// Restored is what a restore did.
type Restored struct {
	DataDir  string `json:"data_dir"`
	Backup   string `json:"backup"`
	Keys     int    `json:"keys"`
	Bytes    int64  `json:"bytes"`
	Replaced string `json:"replaced,omitempty"` // where the store that was there went
}

// Restore loads a backup into d's store directory. A store that is there already is
// refused (ErrRefused) unless replace, which moves it aside to store.replaced-<time> first
// (and back if the restore fails). d holds the restored store afterwards.
func Restore(d *Dir, r io.Reader, replace bool) (Restored, error) {
	res := Restored{DataDir: d.Path}
	dir := d.StorePath()
	if d.Store != nil {
		if !replace {
			return res, refused("refused: %s holds a store already; pass --replace to move it aside (to %s.replaced-<time>) and restore in its place", dir, dir)
		}
		if err := d.Store.Close(); err != nil {
			return res, err
		}
		d.Store = nil
		res.Replaced = dir + ".replaced-" + Stamp(time.Now())
		if err := os.Rename(dir, res.Replaced); err != nil {
			return res, fmt.Errorf("move the store aside: %w", err)
		}
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return res, fmt.Errorf("%s holds files but no store (no MANIFEST); move them away first", dir)
	}
	if err := remember.Restore(dir, r); err != nil {
		os.RemoveAll(dir)
		msg := fmt.Sprintf("restore: %v", err)
		if res.Replaced != "" {
			if rerr := os.Rename(res.Replaced, dir); rerr != nil {
				msg += fmt.Sprintf("; and moving the old store back failed (%v): it is in %s", rerr, res.Replaced)
			} else {
				msg += "; the old store is back in place"
			}
		}
		return res, errors.New(msg)
	}
	l, err := remember.OpenLocal(dir)
	if err != nil {
		return res, fmt.Errorf("open the restored store: %w", err)
	}
	d.Store = l
	// The backup's replica of the metadata group is out of date: the member comes back as
	// a new replica, and its metadata merges into the group (founding it when a whole
	// cluster is restored).
	if err := l.ForgetMetaGroup(); err != nil {
		return res, err
	}
	if err := datadir.MarkMetaSeed(d.Path, "restored from a backup at "+time.Now().UTC().Format(time.RFC3339)); err != nil {
		return res, err
	}
	err = l.Entries("", func(e remember.Entry) error {
		res.Keys++
		res.Bytes += e.Bytes
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("read the restored store: %w", err)
	}
	return res, nil
}
