package remember

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// damageFixture builds two copies of a store holding 400 records and one value large
// enough for the value log: closed (flushed to a table; the value log finished) and
// running (copied while open: the records still in the write-ahead memtable).
func damageFixture(t *testing.T) (closed, running string) {
	t.Helper()
	root := t.TempDir()
	c := newCluster(t, 1, func(cfg *Config) { cfg.Dir = filepath.Join(root, "live") })
	write := func(from, to int) {
		for i := from; i < to; i++ {
			if err := c.stores[0].Write(testContext(t), Write{Key: fmt.Sprintf("k%04d", i), Value: bytes.Repeat([]byte{byte(i)}, 100)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, 200)
	if err := c.stores[0].Write(testContext(t), Write{Key: "big", Value: bytes.Repeat([]byte("b"), MaxValueSize)}); err != nil {
		t.Fatal(err)
	}
	c.closeStore(0)
	closed = filepath.Join(root, "closed")
	copyTree(t, filepath.Join(root, "live"), closed)
	c.open(0)
	write(200, 400)
	running = filepath.Join(root, "running")
	copyTree(t, filepath.Join(root, "live"), running)
	return closed, running
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// firstFile is the first file of dir with the extension, by name.
func firstFile(t *testing.T, dir, ext string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*"+ext))
	slices.Sort(m)
	for _, p := range m {
		if st, err := os.Stat(p); err == nil && st.Size() > logHeaderSize {
			return filepath.Base(p)
		}
	}
	t.Fatalf("no %s file with content in %s", ext, dir)
	return ""
}

// used is how many bytes of a file are not trailing zeros.
func used(data []byte) int { return len(bytes.TrimRight(data, "\x00")) }

// truncateInside cuts a file in half of what it uses, inside an entry of a log (not at its
// end, where a cut would be indistinguishable from a shorter log).
func truncateInside(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := used(data) / 2
	if strings.HasSuffix(path, ".mem") || strings.HasSuffix(path, ".vlog") {
		for scanLog(data[:cut]).parsedEnd == cut {
			cut++
		}
	}
	if err := os.Truncate(path, int64(cut)); err != nil {
		t.Fatal(err)
	}
}

// garble overwrites 48 bytes in the middle of what a file uses (from offset 0 for a log
// whose only content is its header).
func garble(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := used(data) / 2
	if used(data) <= logHeaderSize {
		at = 0
	}
	for i := at; i < at+48 && i < len(data); i++ {
		data[i] ^= 0xa5
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedStoreIsNamedNotOpened damages each kind of Badger file, truncated and garbled:
// opening the store (as the daemon and the offline tools do) fails with a *DamageError
// naming the file, VerifyDir lists it, and nothing panics.
func TestDamagedStoreIsNamedNotOpened(t *testing.T) {
	closed, running := damageFixture(t)
	for _, tc := range []struct {
		base string
		file func(dir string) string
		want string // the file the error names: the damaged one, or the MANIFEST for a lost table
	}{
		{closed, func(string) string { return "MANIFEST" }, "MANIFEST"},
		{closed, func(d string) string { return firstFile(t, d, ".sst") }, ""},
		{closed, func(d string) string { return firstFile(t, d, ".vlog") }, ""},
		{running, func(d string) string { return firstFile(t, d, ".mem") }, ""},
		{closed, func(string) string { return "KEYREGISTRY" }, "KEYREGISTRY"},
	} {
		for _, how := range []string{"truncated", "garbled"} {
			name := tc.file(tc.base)
			t.Run(name+"/"+how, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "store")
				copyTree(t, tc.base, dir)
				if how == "truncated" {
					truncateInside(t, filepath.Join(dir, name))
				} else {
					garble(t, filepath.Join(dir, name))
				}
				want := tc.want
				if want == "" {
					want = name
				}
				_, err := OpenLocal(dir)
				var de *DamageError
				if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) {
					t.Fatalf("OpenLocal: %v, want a *DamageError", err)
				}
				if de.Files[0].File != want || !strings.Contains(err.Error(), filepath.Join(dir, want)) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("the error names %+v, want %s on one line: %v", de.Files, want, err)
				}
				v, err := VerifyDir(dir)
				if err != nil || len(v.Damaged) == 0 || v.Damaged[0].File != want {
					t.Fatalf("VerifyDir: %+v, %v", v, err)
				}
			})
		}
	}
}

// TestSoundStoreVerifies: both fixtures, a crash's leftovers included, check out.
func TestSoundStoreVerifies(t *testing.T) {
	closed, running := damageFixture(t)
	for _, dir := range []string{closed, running} {
		v, err := VerifyDir(dir)
		if err != nil || len(v.Damaged) > 0 || v.Logs == 0 {
			t.Fatalf("VerifyDir(%s) = %+v, %v", dir, v, err)
		}
		l, err := OpenLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		voters := metaLayout{}.ConfigKey(Unit{}) // the metadata group's record of its voters
		if err := l.Entries("", func(e Entry) error {
			if e.Key != voters {
				n++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := l.Backup(&buf); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{closed: 201, running: 401}[dir]; n != want {
			t.Fatalf("%s holds %d records, want %d", dir, n, want)
		}
		if _, err := io.Copy(io.Discard, &buf); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := VerifyDir(filepath.Join(t.TempDir(), "none")); err != nil || len(v.Damaged) > 0 {
		t.Fatalf("a directory without a store: %+v, %v", v, err)
	}
}

// TestUnlistedTables: Badger deletes the tables its MANIFEST does not list. One a crash
// left behind before its MANIFEST record — a flush, whose write-ahead memtable is still
// there, or a compaction, whose inputs are still listed — holds nothing that is not
// elsewhere: not damage. One whose records are nowhere else means the MANIFEST lost records.
func TestUnlistedTables(t *testing.T) {
	closed, running := damageFixture(t)
	// flushed: the running copy opened and closed, its write-ahead memtable flushed into a
	// second table (records 200..399).
	flushed := filepath.Join(t.TempDir(), "flushed")
	copyTree(t, running, flushed)
	l, err := OpenLocal(flushed)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(flushed, "*.sst"))
	slices.Sort(tables)
	second, err := os.ReadFile(tables[len(tables)-1])
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(filepath.Join(closed, firstFile(t, closed, ".sst")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		base    string
		table   []byte
		damaged bool
	}{
		{"a flush's leftover (its records in the write-ahead memtable)", running, second, false},
		{"a compaction's leftover (its records in a listed table)", running, first, false},
		{"records nowhere else", closed, second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			copyTree(t, tc.base, dir)
			if err := os.WriteFile(filepath.Join(dir, "000099.sst"), tc.table, 0o600); err != nil {
				t.Fatal(err)
			}
			v, err := VerifyDir(dir)
			if err != nil || (len(v.Damaged) > 0) != tc.damaged {
				t.Fatalf("damaged %v, want %v: %+v, %v", len(v.Damaged) > 0, tc.damaged, v, err)
			}
			if tc.damaged && (v.Damaged[0].File != "MANIFEST" || !strings.Contains(v.Damaged[0].Problem, "000099.sst")) {
				t.Fatalf("%+v", v.Damaged)
			}
		})
	}
}
