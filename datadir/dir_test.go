package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLockKeepsOthersOut: a directory a daemon holds (Open) refuses a second daemon and a
// data command, naming the holder's pid; a data command's hold (OpenStopped) refuses a
// daemon; once closed, the directory can be taken again. OpenStopped creates nothing in a
// directory no daemon ran in.
func TestLockKeepsOthersOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "member")
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())
	for name, open := range map[string]func(string) (*Dir, error){"Open": Open, "OpenStopped": OpenStopped} {
		_, err := open(dir)
		var inUse *InUseError
		if !errors.As(err, &inUse) || !errors.Is(err, ErrInUse) || inUse.PID != pid || inUse.Dir != dir {
			t.Errorf("%s of a held directory: %v; want an InUseError naming pid %s", name, err, pid)
		}
	}
	d.Close()

	s, err := OpenStopped(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrInUse) {
		t.Errorf("Open while a data command holds it: %v", err)
	}
	s.Close()
	if d, err = Open(dir); err != nil {
		t.Fatalf("Open after both closed: %v", err)
	}
	d.Close()

	empty := t.TempDir()
	s, err = OpenStopped(empty)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("OpenStopped created %v", entries)
	}
}

func TestIncarnationRisesAndSurvives(t *testing.T) {
	dir := t.TempDir()
	for want := uint64(1); want <= 3; want++ {
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.NextIncarnation()
		d.Close()
		if err != nil || got != want {
			t.Fatalf("start %d: incarnation %d, %v", want, got, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, IncarnationFile), []byte("three\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.NextIncarnation(); err == nil || !strings.Contains(err.Error(), IncarnationFile) {
		t.Errorf("corrupt incarnation: %v; want an error naming the file", err)
	}
}

func TestAddrs(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadAddrs(dir); err == nil || !strings.Contains(err.Error(), "is a sharddaemon running") {
		t.Errorf("no addrs file: %v", err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	want := []string{"/ip4/127.0.0.1/tcp/1/p2p/x", "/ip4/10.0.0.1/tcp/1/p2p/x"}
	if err := d.WriteAddrs(want); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadAddrs(dir); err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ReadAddrs: %q, %v; want %q", got, err, want)
	}
	d.RemoveAddrs()
	if _, err := ReadAddrs(dir); err == nil {
		t.Error("addrs still there after RemoveAddrs")
	}
}

func TestLastClusterSize(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := d.LastClusterSize(); got != 0 || err != nil {
		t.Fatalf("no file: %d, %v; want 0 (a new member)", got, err)
	}
	if err := d.WriteLastClusterSize(5); err != nil {
		t.Fatal(err)
	}
	if got, err := d.LastClusterSize(); got != 5 || err != nil {
		t.Fatalf("after writing 5: %d, %v", got, err)
	}
	for content, want := range map[string]uint32{"7\n": 7, " 3 ": 3} {
		if err := os.WriteFile(d.File(LastClusterFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := d.LastClusterSize(); got != want || err != nil {
			t.Errorf("%q: %d, %v; want %d", content, got, err, want)
		}
	}
	for _, content := range []string{"seven", "70000", "-1", ""} {
		if err := os.WriteFile(d.File(LastClusterFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := d.LastClusterSize()
		if err == nil || !strings.Contains(err.Error(), LastClusterFile) || !strings.Contains(err.Error(), "cluster.forget-last-cluster=on") {
			t.Errorf("%q: err = %v; want one naming the file and the way out", content, err)
		}
	}
}
