package node

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
)

func startTestNode(t *testing.T, dir string, store StoreConfig) (*Node, error) {
	t.Helper()
	return Start(context.Background(), Config{DataDir: dir, Membership: membership.DefaultConfig(), TickInterval: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testLog{t}, nil)), Store: store})
}

// TestPanicFailsTheMember: a panic in a goroutine that works with the store stops the
// member with a failure (the daemon exits 1), not the process.
func TestPanicFailsTheMember(t *testing.T) {
	n, err := startTestNode(t, t.TempDir(), StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	go func() {
		defer n.caught("a test goroutine")
		panic("boom")
	}()
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not stop")
	}
	if err := n.Failure(); err == nil || !strings.Contains(err.Error(), "a test goroutine panicked: boom") || n.StopReason() != nil {
		t.Fatalf("Failure() = %v, StopReason() = %v", err, n.StopReason())
	}
}

// TestDamagedStoreStopsTheStart: a member whose store is damaged does not start, and says
// which file and what to do; with RebuildDamaged it moves the store aside, starts with an
// empty one and refills (alone, it waits for peers).
func TestDamagedStoreStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	n, err := startTestNode(t, dir, StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.store.Write(context.Background(), remember.Write{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(datadir.StorePath(dir), "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table")
	}
	if err := os.Truncate(tables[0], 100); err != nil {
		t.Fatal(err)
	}
	_, err = startTestNode(t, dir, StoreConfig{})
	if !errors.Is(err, remember.ErrDamaged) || !strings.Contains(err.Error(), tables[0]) || !strings.Contains(err.Error(), "shardctl data rebuild --data-dir "+dir) {
		t.Fatalf("start on a damaged store: %v", err)
	}
	n, err = startTestNode(t, dir, StoreConfig{RebuildDamaged: true})
	if err != nil {
		t.Fatalf("start with RebuildDamaged: %v", err)
	}
	defer n.Close()
	if aside, _ := filepath.Glob(filepath.Join(dir, datadir.DamagedPrefix+"*", filepath.Base(tables[0]))); len(aside) != 1 {
		t.Fatalf("the damaged store is not kept: %v", aside)
	}
	if h := n.StoreHealth(); !h.Refill.Active || !strings.Contains(h.Refill.Reason, filepath.Base(tables[0])) {
		t.Fatalf("StoreHealth() = %+v", h)
	}
}
