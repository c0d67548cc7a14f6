package remember

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirectoryInUse: a second Open or an OpenLocal of a directory a store holds is refused,
// naming the directory; after Close it opens.
func TestDirectoryInUse(t *testing.T) {
	c := newCluster(t, 1, nil)
	cfg := c.config(0)
	_, err := Open(testContext(t), cfg)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), cfg.Dir) {
		t.Fatalf("second Open: %v", err)
	}
	if _, err := OpenLocal(cfg.Dir); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), cfg.Dir) {
		t.Fatalf("OpenLocal of a held directory: %v", err)
	}
	c.closeStore(0)
	l, err := OpenLocal(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(testContext(t), cfg); !errors.Is(err, ErrInUse) {
		t.Fatalf("Open while OpenLocal holds it: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLocal(filepath.Join(t.TempDir(), "nothing")); err == nil || !strings.Contains(err.Error(), "holds no store") {
		t.Errorf("OpenLocal of an empty directory: %v", err)
	}
}

// TestLocal: offline scan, backup and restore, and prefix deletion with progress on a
// stopped member's directory.
func TestLocal(t *testing.T) {
	c := newCluster(t, 1, nil)
	ctx := testContext(t)
	for part := range 3 {
		var ws []Write
		for i := part * 4000; i < (part+1)*4000; i++ {
			ws = append(ws, Write{Key: fmt.Sprintf("re/counter/%d/e%d", i%10, i), Value: []byte("1")})
		}
		if err := c.stores[0].Write(ctx, ws...); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.stores[0].Write(ctx, Write{Key: "re/echo/1/x", Value: []byte("echo")}, Write{Key: "coord/counter", Value: []byte("c")}); err != nil {
		t.Fatal(err)
	}
	if err := c.stores[0].Write(ctx, Write{Key: "re/counter/0/e0", Delete: true}); err != nil {
		t.Fatal(err)
	}
	c.closeStore(0)

	l, err := OpenLocal(c.dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	count := func(prefix string) (live, dead int) {
		t.Helper()
		err := l.Scan(prefix, func(r Record) error {
			if r.Deleted {
				dead++
			} else {
				live++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return live, dead
	}
	if live, dead := count("re/counter/"); live != 11999 || dead != 1 {
		t.Fatalf("scan: %d live, %d tombstones", live, dead)
	}
	var backup bytes.Buffer
	if _, err := l.Backup(&backup); err != nil {
		t.Fatal(err)
	}
	var calls []int
	n, err := l.DeletePrefix("re/counter/", func(done int) { calls = append(calls, done) })
	if err != nil || n != 12000 {
		t.Fatalf("DeletePrefix: %d, %v", n, err)
	}
	if len(calls) != 2 || calls[1] != 12000 {
		t.Errorf("progress calls %v", calls)
	}
	if live, dead := count("re/"); live != 1 || dead != 0 {
		t.Errorf("after deletion: %d live, %d tombstones under re/", live, dead)
	}
	if live, _ := count("coord/"); live != 1 {
		t.Errorf("another type's data gone")
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if err := Restore(restored, &backup); err != nil {
		t.Fatal(err)
	}
	if err := Restore(c.dirs[0], bytes.NewReader(nil)); err == nil {
		t.Error("restore into a store's directory accepted")
	}
	r, err := OpenLocal(restored)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	if err := r.Scan("re/echo/", func(rec Record) error { got = append(got, rec.Key+"="+string(rec.Value)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "re/echo/1/x=echo" {
		t.Errorf("restored: %v", got)
	}
}

// TestDirectoryHeldByAnotherProcess: a directory another process holds (this test binary
// re-run as a helper) is refused with ErrInUse, and opens once that process is gone.
func TestDirectoryHeldByAnotherProcess(t *testing.T) {
	c := newCluster(t, 1, nil)
	dir := c.dirs[0]
	c.closeStore(0)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldDirectory$")
	cmd.Env = append(os.Environ(), "REMEMBER_HOLD_DIR="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "holding" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	_, err = OpenLocal(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "another process") {
		t.Errorf("OpenLocal of a directory another process holds: %v", err)
	}
	if _, err := Open(testContext(t), c.config(0)); !errors.Is(err, ErrInUse) {
		t.Errorf("Open of a directory another process holds: %v", err)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
}

// TestHelperHoldDirectory is TestDirectoryHeldByAnotherProcess's other process: it holds
// $REMEMBER_HOLD_DIR until its stdin closes.
func TestHelperHoldDirectory(t *testing.T) {
	dir := os.Getenv("REMEMBER_HOLD_DIR")
	if dir == "" {
		t.Skip("a helper process for TestDirectoryHeldByAnotherProcess")
	}
	l, err := OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// TestLocalEntries: Entries lists exactly what DeletePrefix removes (tombstones and keys
// that only hold a fence floor included, which Scan leaves out), with sizes, and nothing of
// a key that only shares a longer prefix.
func TestLocalEntries(t *testing.T) {
	c := newCluster(t, 1, nil)
	ctx := testContext(t)
	if err := c.stores[0].Write(ctx,
		Write{Key: "st\x00count\x00a", Value: []byte("1")},
		Write{Key: "st\x00count\x00b", Value: []byte("22")},
		Write{Key: "st\x00counter\x00a", Value: []byte("333")},
	); err != nil {
		t.Fatal(err)
	}
	if err := c.stores[0].Write(ctx, Write{Key: "st\x00count\x00b", Delete: true}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.stores[0].GetFenced(ctx, "st\x00count\x00fenced", 7); err != nil || found {
		t.Fatalf("GetFenced: %v, %v", found, err)
	}
	c.closeStore(0)

	l, err := OpenLocal(c.dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var keys []string
	var floors, dead int
	err = l.Entries("st\x00count\x00", func(e Entry) error {
		keys = append(keys, e.Key)
		if e.Version.IsZero() && e.Floor == 7 {
			floors++
		}
		if e.Deleted {
			dead++
		}
		if e.Bytes <= int64(2*len(e.Key)) || e.Value != nil {
			t.Errorf("entry %q: %d bytes, value %q", e.Key, e.Bytes, e.Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || floors != 1 || dead != 1 {
		t.Fatalf("entries %q: %d floor-only, %d tombstones", keys, floors, dead)
	}
	scanned := 0
	if err := l.Scan("st\x00count\x00", func(Record) error { scanned++; return nil }); err != nil || scanned != 2 {
		t.Errorf("scan saw %d records (%v), want 2: the floor-only key is left out", scanned, err)
	}
	n, err := l.DeletePrefix("st\x00count\x00", nil)
	if err != nil || n != len(keys) {
		t.Errorf("DeletePrefix removed %d (%v), Entries listed %d", n, err, len(keys))
	}
	var left []string
	if err := l.Entries("st\x00", func(e Entry) error { left = append(left, e.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != "st\x00counter\x00a" {
		t.Errorf("left after removing count: %q", left)
	}
}
