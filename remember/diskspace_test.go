package remember

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// fakeDisk stands in for the file system under a diskGuard.
type fakeDisk struct {
	mu        sync.Mutex
	free      uint64
	allocated []string
}

func (d *fakeDisk) set(free uint64) {
	d.mu.Lock()
	d.free = free
	d.mu.Unlock()
}

func (d *fakeDisk) install(g *diskGuard) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.statfs = func(string) (uint64, uint64, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.free, 1 << 40, nil
	}
	g.alloc = func(path string) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.allocated = append(d.allocated, filepath.Base(path))
		return nil
	}
}

const mib = 1 << 20

func TestDiskGuardKeepsTheReserve(t *testing.T) {
	dir := t.TempDir()
	g := newDiskGuard(dir, 100*mib, badger.DefaultOptions(dir).WithMemTableSize(8*mib), testLogger(t))
	disk := &fakeDisk{free: 500 * mib}
	disk.install(g)
	if err := g.admit(mib); err != nil {
		t.Fatal(err)
	}
	disk.set(100*mib + mib/2) // a commit of 1 MiB would eat into the reserve
	err := g.admit(mib)
	var df *DiskFullError
	if !errors.As(err, &df) || !errors.Is(err, ErrDiskFull) || df.Free != 100*mib+mib/2 || df.Reserve != 100*mib || df.Dir != dir {
		t.Fatalf("admit below the reserve: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "store.min-free-space") || !strings.Contains(msg, "100.5 MiB free") || !strings.Contains(msg, dir) {
		t.Fatalf("the error does not say what is wrong: %s", msg)
	}
	if sp := g.state(); !sp.Full || sp.Refused != 1 || sp.Since.IsZero() {
		t.Fatalf("state: %+v", sp)
	}
	disk.set(105 * mib) // above the reserve, not by an eighth of it: still full (no flapping)
	g.check()
	if err := g.admit(1); err == nil || !g.state().Full {
		t.Fatal("writes resumed at the edge of the reserve")
	}
	disk.set(120 * mib)
	g.check()
	if sp := g.state(); sp.Full || sp.Free != 120*mib {
		t.Fatalf("space came back, state %+v", sp)
	}
	if err := g.admit(mib); err != nil {
		t.Fatalf("writes did not resume: %v", err)
	}
	if sp := g.state(); sp.Refused != 2 {
		t.Fatalf("refused %d, want 2", sp.Refused)
	}
}

func TestDiskGuardPreallocatesWriteAheadLogs(t *testing.T) {
	dir := t.TempDir()
	g := newDiskGuard(dir, 0, badger.DefaultOptions(dir).WithMemTableSize(8*mib), testLogger(t))
	disk := &fakeDisk{}
	disk.install(g)
	for _, f := range []string{"00001.mem", "00002.mem", "000001.vlog"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g.check()
	if err := os.Remove(filepath.Join(dir, "00001.mem")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00003.mem"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = g.admit(mib) // less than an eighth of a log since the last look: no new look
	_ = g.admit(2 * mib)
	disk.mu.Lock()
	defer disk.mu.Unlock()
	if want := []string{"00001.mem", "00002.mem", "00003.mem"}; !slices.Equal(disk.allocated, want) {
		t.Fatalf("preallocated %v, want %v (each write-ahead log once, no value log)", disk.allocated, want)
	}
	if g.state().Full {
		t.Fatal("a guard without a reserve is never full")
	}
}

// TestStoreRefusesWritesBelowTheReserve: with the file system below the reserve, a write
// fails with ErrDiskFull (one replica of one) and writes nothing; with space back it
// succeeds, and reads go on throughout.
func TestStoreRefusesWritesBelowTheReserve(t *testing.T) {
	c := newCluster(t, 1, func(cfg *Config) { cfg.MinFreeSpace = 64 * mib })
	s := c.stores[0]
	disk := &fakeDisk{free: 1 << 30}
	disk.install(s.space)
	ctx := testContext(t)
	if err := s.Write(ctx, Write{Key: "a", Value: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	disk.set(10 * mib)
	err := s.Write(ctx, Write{Key: "b", Value: []byte("2")})
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("write below the reserve: %v", err)
	}
	if _, found, err := s.Get(ctx, "b"); err != nil || found {
		t.Fatalf("refused write is there: %v %v", found, err)
	}
	if rec, found, err := s.Get(ctx, "a"); err != nil || !found || string(rec.Value) != "1" {
		t.Fatalf("read while full: %v %v %v", rec, found, err)
	}
	if sp := s.Space(); !sp.Full || sp.Reserve != 64*mib || sp.Refused == 0 {
		t.Fatalf("Space() = %+v", sp)
	}
	disk.set(1 << 30)
	s.space.check()
	if err := s.Write(ctx, Write{Key: "b", Value: []byte("2")}); err != nil {
		t.Fatalf("space back, write: %v", err)
	}
}

// TestFullTmpfsIsAnErrorNotACrash fills a real tmpfs that holds a store (root only: it
// mounts one). Without the reserve and the preallocation Badger died of SIGBUS in its
// memory-mapped log write here. Now writes fail with ErrDiskFull at the reserve and after
// something else took it too, everything acknowledged is read or refused for the full disk
// (never lost: checkAckedOrDiskFull), the store closes
// without crashing; a new process refuses to open it while its write-ahead log cannot be
// flushed, and opens it, with every acknowledged write, once space is back. The store runs
// in child processes, so that a SIGBUS fails the test instead of killing it.
func TestFullTmpfsIsAnErrorNotACrash(t *testing.T) {
	if env := os.Getenv("SHARDMESH_TMPFS_CHILD"); env != "" {
		phase, rest, _ := strings.Cut(env, ":")
		mnt, ackFile, _ := strings.Cut(rest, ":")
		if phase == "fill" {
			fillTmpfsChild(t, mnt, ackFile)
		} else {
			reopenTmpfsChild(t, mnt, ackFile)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	ackFile := filepath.Join(t.TempDir(), "acked")
	for _, phase := range []string{"fill", "reopen"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestFullTmpfsIsAnErrorNotACrash$", "-test.v")
		cmd.Env = append(os.Environ(), "SHARDMESH_TMPFS_CHILD="+phase+":"+mnt+":"+ackFile)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("%s: the store died of %v:\n%s", phase, ee.Sys().(syscall.WaitStatus).Signal(), out)
		}
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("%s: %v\n%s", phase, err, out)
		}
		t.Logf("%s:\n%s", phase, out)
	}
}

// tmpfsConfig is the store of the tmpfs test: a small value log, a reserve of 4 MiB.
func tmpfsConfig(mnt string) func(*Config) {
	return func(cfg *Config) {
		cfg.Dir = filepath.Join(mnt, "store")
		cfg.MinFreeSpace = 4 * mib
		cfg.Badger = func(o badger.Options) badger.Options { return o.WithValueLogFileSize(1 * mib) }
	}
}

func fillTmpfsChild(t *testing.T, mnt, ackFile string) {
	c := newCluster(t, 1, tmpfsConfig(mnt))
	s := c.stores[0]
	ctx := testContext(t)
	var acked []string
	write := func(key string) error {
		err := s.Write(ctx, Write{Key: key, Value: []byte(strings.Repeat("v", 200))})
		if err == nil {
			acked = append(acked, key)
		}
		return err
	}
	for i := range 300 {
		if err := write(fmt.Sprintf("a%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Leave 1 MiB above the reserve: the writes go on until they reach it.
	free, _, err := statFS(mnt)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, filepath.Join(mnt, "filler-1"), int64(free)-5*mib)
	var refused error
	for i := 0; refused == nil && i < 100000; i++ {
		refused = write(fmt.Sprintf("b%05d", i))
	}
	if !errors.Is(refused, ErrDiskFull) {
		t.Fatalf("writes up to the reserve: %v, want ErrDiskFull", refused)
	}
	t.Logf("%d writes acknowledged, then: %v", len(acked), refused)
	// Now something else takes the reserve too — once Badger has flushed the memtables its
	// last writes filled: what it writes on its own is what the reserve is for, and an
	// outside process that takes the reserve while Badger flushes can still make it fault
	// (docs/storage.md: keep the store on a file system of its own).
	waitFlushed(t, filepath.Join(mnt, "store"))
	fill(t, filepath.Join(mnt, "filler-2"), 1<<40)
	if err := write("c"); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("write on the full disk: %v", err)
	}
	checkAckedOrDiskFull(t, s, acked)
	c.closeStore(0) // without flushing the memtable: it could not be written
	if err := os.WriteFile(ackFile, []byte(strings.Join(acked, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func reopenTmpfsChild(t *testing.T, mnt, ackFile string) {
	data, err := os.ReadFile(ackFile)
	if err != nil {
		t.Fatal(err)
	}
	acked := strings.Split(string(data), "\n")
	c := newCluster(t, 1, nil) // a host, and a store elsewhere to close
	c.closeStore(0)
	cfg := c.config(0)
	tmpfsConfig(mnt)(&cfg)
	_, err = Open(testContext(t), cfg)
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("opening on the full disk, whose write-ahead log cannot be flushed: %v", err)
	}
	t.Logf("refused to open: %v", err)
	for _, f := range []string{"filler-1", "filler-2"} {
		if err := os.Remove(filepath.Join(mnt, f)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkAcked(t, s, acked)
	if err := s.Write(testContext(t), Write{Key: "d", Value: []byte("x")}); err != nil {
		t.Fatalf("space back, write: %v", err)
	}
}

func checkAcked(t *testing.T, s *Store, acked []string) {
	t.Helper()
	ctx := testContext(t)
	for _, key := range acked {
		if _, found, err := s.Get(ctx, key); err != nil || !found {
			t.Fatalf("acknowledged %s: found %v, %v", key, found, err)
		}
	}
}

// checkAckedOrDiskFull reads every acknowledged key on a store whose disk is full: each is
// found, or the read fails for the full disk — never "not found". These keys are metadata,
// and this member is the metadata group's only voter: a write the group appended and could
// not store on the full disk stops its replica (it starts again every 5 s, and stops again
// while it cannot store its term), so its reads may fail until space is back; the reopen
// phase reads them all then.
func checkAckedOrDiskFull(t *testing.T, s *Store, acked []string) {
	t.Helper()
	ctx := testContext(t)
	refused := 0
	for _, key := range acked {
		_, found, err := s.Get(ctx, key)
		switch {
		case err != nil && (errors.Is(err, ErrDiskFull) || strings.Contains(err.Error(), "disk full")):
			refused++
		case err != nil || !found:
			t.Fatalf("acknowledged %s: found %v, %v", key, found, err)
		}
	}
	t.Logf("on the full disk: %d of %d acknowledged keys read, %d reads refused for the full disk", len(acked)-refused, len(acked), refused)
}

// fill writes up to n bytes of zeros to a new file at path, stopping at a full disk.
func fill(t *testing.T, path string, n int64) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n > 0 {
		w, err := f.Write(buf[:min(int64(len(buf)), n)])
		if err != nil {
			return
		}
		n -= int64(w)
	}
}

// waitFlushed waits until Badger has flushed every full memtable of the store in dir: one
// write-ahead log is left.
func waitFlushed(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		m, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
		if len(m) <= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("memtables not flushed: %v", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkDiskGuardAdmit is the check before every local commit: a statfs of the store's
// directory (and, every eighth of a write-ahead log, a look for new ones to preallocate).
func BenchmarkDiskGuardAdmit(b *testing.B) {
	dir := b.TempDir()
	g := newDiskGuard(dir, 1<<20, badger.DefaultOptions(dir).WithMemTableSize(DefaultMemTableSize), testLogger(b))
	for b.Loop() {
		if err := g.admit(4096); err != nil {
			b.Fatal(err)
		}
	}
}
