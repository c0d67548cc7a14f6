package main

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

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/remember"
)

// backupFile writes a full backup of d's store to path, which must not exist yet, through
// a temporary file that is synced and renamed, and returns its size in bytes.
func backupFile(d *stoppedDir, path string) (int64, error) {
	if _, err := os.Stat(path); err == nil {
		return 0, usagef("backup file %s exists already; not overwriting it", path)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, cli.Exit(fmt.Sprintf("back up %s: %v", d.path, err), exitFailed)
	}
	fail := func(err error) (int64, error) {
		f.Close()
		os.Remove(tmp)
		return 0, cli.Exit(fmt.Sprintf("back up %s to %s: %v", d.path, path, err), exitFailed)
	}
	if _, err := d.store.Backup(f); err != nil {
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
		return 0, cli.Exit(fmt.Sprintf("back up %s: %v", d.path, err), exitFailed)
	}
	return st.Size(), nil
}

// stamp names files by the time they were made, in UTC.
func stamp(t time.Time) string { return t.UTC().Format("20060102T150405Z") }

func dataBackupCommand() *cli.Command {
	return &cli.Command{
		Name:  "backup",
		Usage: "write a full backup of a stopped member's store to a file",
		Description: `Writes every record of the store in --data-dir (a stopped member's data directory) to
--out FILE in Badger's backup format ('-': standard output). Restore it with 'shardctl data
restore'. An existing FILE is not overwritten (exit code 2). Refused (exit code 4) while a
sharddaemon holds the directory.
Example:
   shardctl data backup --data-dir /tmp/a --out a-store.backup`,
		Flags: []cli.Flag{
			dataDirFlag("the stopped member's data `DIR`"),
			&cli.StringFlag{Name: "out", Usage: "the backup `FILE` to write ('-': standard output)"},
		},
		Action: func(c *cli.Context) error {
			if _, err := positional(c, "", 0); err != nil {
				return err
			}
			paths, err := dataDirs(c, 1)
			if err != nil {
				return err
			}
			out := c.String("out")
			if out == "" {
				return usagef("data backup needs --out FILE (or --out - for standard output)")
			}
			d, err := openStopped(paths[0], true)
			if err != nil {
				return err
			}
			defer d.close()
			if out == "-" {
				if _, err := d.store.Backup(c.App.Writer); err != nil {
					return cli.Exit(err.Error(), exitFailed)
				}
				return nil
			}
			size, err := backupFile(d, out)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, map[string]any{"data_dir": d.path, "backup": out, "bytes": size})
			}
			fmt.Fprintf(c.App.Writer, "backed up the store of %s to %s (%d bytes)\n", d.name(), out, size)
			return nil
		},
	}
}

// restoreJSON is data restore --json.
type restoreJSON struct {
	DataDir  string `json:"data_dir"`
	Backup   string `json:"backup"`
	Keys     int    `json:"keys"`
	Bytes    int64  `json:"bytes"`
	Replaced string `json:"replaced,omitempty"` // where the store that was there went
}

func dataRestoreCommand() *cli.Command {
	return &cli.Command{
		Name:  "restore",
		Usage: "restore a backup into a stopped member's data directory",
		Description: `Loads --in FILE (written by 'shardctl data backup' or by remove-internal-data's automatic
backup) into the store of --data-dir, a stopped member's data directory (created if
missing). A directory that holds a store already is refused (exit code 4) unless
--replace, which moves that store aside to DIR/store.replaced-<time> first (delete it once
the restored member runs well). Refused (exit code 4) while a sharddaemon holds the
directory. Once the member runs again, anti-entropy brings it up to date with the other
members: a restore brings back what the others no longer hold only when every member's
directory is restored.
Example:
   shardctl data restore --data-dir /tmp/a --in /tmp/a/backups/store-20261123T171600Z.backup --replace`,
		Flags: []cli.Flag{
			dataDirFlag("the stopped member's data `DIR`"),
			&cli.StringFlag{Name: "in", Usage: "the backup `FILE` to load"},
			&cli.BoolFlag{Name: "replace", Usage: "move a store that is there aside instead of refusing"},
		},
		Action: func(c *cli.Context) error {
			if _, err := positional(c, "", 0); err != nil {
				return err
			}
			paths, err := dataDirs(c, 1)
			if err != nil {
				return err
			}
			in := c.String("in")
			if in == "" {
				return usagef("data restore needs --in FILE")
			}
			f, err := os.Open(in)
			if errors.Is(err, fs.ErrNotExist) {
				return usagef("--in %s: no such file", in)
			}
			if err != nil {
				return cli.Exit(fmt.Sprintf("--in %s: %v", in, err), exitFailed)
			}
			defer f.Close()
			if err := os.MkdirAll(paths[0], 0o700); err != nil {
				return cli.Exit(fmt.Sprintf("--data-dir %s: %v", paths[0], err), exitFailed)
			}
			d, err := openStopped(paths[0], false)
			if err != nil {
				return err
			}
			defer d.close()
			res, err := restoreInto(d, f, c.Bool("replace"))
			if err != nil {
				return err
			}
			res.Backup = in
			if c.Bool("json") {
				return printJSON(c.App.Writer, res)
			}
			fmt.Fprintf(c.App.Writer, "restored %d keys (%d bytes) from %s into %s\n", res.Keys, res.Bytes, in, storeDir(d.path))
			if res.Replaced != "" {
				fmt.Fprintf(c.App.Writer, "the store that was there is in %s\n", res.Replaced)
			}
			return nil
		},
	}
}

// restoreInto loads a backup into d's store directory, moving an existing store aside with
// replace (and back if the restore fails).
func restoreInto(d *stoppedDir, r io.Reader, replace bool) (restoreJSON, error) {
	res := restoreJSON{DataDir: d.path}
	dir := storeDir(d.path)
	if d.store != nil {
		if !replace {
			return res, cli.Exit(fmt.Sprintf("refused: %s holds a store already; pass --replace to move it aside (to %s.replaced-<time>) and restore in its place", dir, dir), exitRefused)
		}
		if err := d.store.Close(); err != nil {
			return res, cli.Exit(err.Error(), exitFailed)
		}
		d.store = nil
		res.Replaced = dir + ".replaced-" + stamp(time.Now())
		if err := os.Rename(dir, res.Replaced); err != nil {
			return res, cli.Exit(fmt.Sprintf("move the store aside: %v", err), exitFailed)
		}
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return res, cli.Exit(fmt.Sprintf("%s holds files but no store (no MANIFEST); move them away first", dir), exitFailed)
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
		return res, cli.Exit(msg, exitFailed)
	}
	l, err := remember.OpenLocal(dir)
	if err != nil {
		return res, cli.Exit(fmt.Sprintf("open the restored store: %v", err), exitFailed)
	}
	d.store = l
	err = l.Entries("", func(e remember.Entry) error {
		res.Keys++
		res.Bytes += e.Bytes
		return nil
	})
	if err != nil {
		return res, cli.Exit(fmt.Sprintf("read the restored store: %v", err), exitFailed)
	}
	return res, nil
}

// defaultBackupPath is where remove-internal-data backs up a directory's store unless told
// otherwise: DIR/backups/store-<time>.backup, or in --backup-dir named after DIR.
func defaultBackupPath(d *stoppedDir, backupDir string, now time.Time) (string, error) {
	dir := filepath.Join(d.path, "backups")
	name := "store-" + stamp(now) + ".backup"
	if backupDir != "" {
		dir = backupDir
		name = filepath.Base(filepath.Clean(d.path)) + "-" + name
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", cli.Exit(fmt.Sprintf("backup directory: %v", err), exitFailed)
	}
	path := filepath.Join(dir, name)
	for i := 2; ; i++ { // two removals within a second
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		path = filepath.Join(dir, strings.TrimSuffix(name, ".backup")+"-"+strconv.Itoa(i)+".backup")
	}
}
