package remember

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRestoredClusterSeedsTheGroup: a whole cluster restored from backups holds no
// metadata group (each restored store forgets its replica: the group went on after the
// backup). With the seed marker, the oldest voter founds the group from its disk, answers
// nothing before its metadata is in, and the others merge theirs in: every key any backup
// held is in the group, with the newest version of each. Without the marker the cluster
// waits for a group that no member founds (the rule that keeps a restarting cluster from
// founding a second, empty one).
func TestRestoredClusterSeedsTheGroup(t *testing.T) {
	for _, seed := range []bool{true, false} {
		t.Run(fmt.Sprintf("seed=%v", seed), func(t *testing.T) {
			var restored []string // the restored stores' directories, by member
			c := newCluster(t, 3, func(cfg *Config) {
				cfg.Timeout = 500 * time.Millisecond
				for i, dir := range restored {
					if cfg.Dir == dir {
						cfg.Dir, cfg.Returning = dir, true
						if seed {
							cfg.MetaSeedMarker = filepath.Join(filepath.Dir(dir), fmt.Sprintf("metadata-seed-%d", i))
						}
					}
				}
			})
			ctx := testContext(t)
			for _, k := range []string{"m/a", "m/b", "m/c"} {
				if err := c.stores[0].Write(ctx, Write{Key: k, Value: []byte("1"), Epoch: 1}); err != nil {
					t.Fatal(err)
				}
			}
			// Backups of the three stopped stores.
			backups := make([]bytes.Buffer, 3)
			for i := range c.stores {
				waitFor(t, fmt.Sprintf("member %d to hold the metadata", i), func() bool { e := c.local(i, "m/c"); return !e.absent() })
				c.closeStore(i)
				l, err := OpenLocal(c.dirs[i])
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.Backup(&backups[i]); err != nil {
					t.Fatal(err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			// Restore each into a new directory, as `shardctl data restore` does: the
			// replica forgotten, the marker written. Members 0 and 1 lost m/c: member 2's
			// seed brings it.
			for i := range c.stores {
				dir := c.dirs[i] + ".restored"
				if err := Restore(dir, &backups[i]); err != nil {
					t.Fatal(err)
				}
				l, err := OpenLocal(dir)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.ForgetMetaGroup(); err != nil {
					t.Fatal(err)
				}
				if i < 2 {
					if _, err := l.DeletePrefix("m/c", nil); err != nil {
						t.Fatal(err)
					}
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				restored = append(restored, dir)
				c.dirs[i] = dir
				if seed {
					if err := os.WriteFile(filepath.Join(filepath.Dir(dir), fmt.Sprintf("metadata-seed-%d", i)), []byte("test\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			c.open(2)
			if err := c.stores[2].Write(ctx, Write{Key: "m/x", Value: []byte("2"), Epoch: 1}); err == nil {
				t.Fatal("a write with no group founded succeeded")
			}
			c.open(0)
			c.open(1)
			if !seed {
				var me *MetaError
				if _, _, err := c.stores[0].Get(ctx, "m/a"); !errors.As(err, &me) {
					t.Fatalf("without a seed a restored cluster founds no group, but a read answered: %v", err)
				}
				return
			}
			c.waitGroup()
			for i := range c.stores {
				for _, k := range []string{"m/a", "m/b", "m/c"} {
					rec, found, err := c.stores[i].Get(ctx, k)
					if err != nil || !found || string(rec.Value) != "1" {
						t.Errorf("member %d reads %s = %q (found %v, %v) after the restore", i, k, rec.Value, found, err)
					}
				}
				waitFor(t, fmt.Sprintf("member %d to end its seed", i), func() bool { return !c.stores[i].MetaStatus().Seeding })
				if _, err := os.Stat(filepath.Join(filepath.Dir(restored[i]), fmt.Sprintf("metadata-seed-%d", i))); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("member %d's seed marker is still there: %v", i, err)
				}
			}
			if err := c.stores[1].Write(ctx, Write{Key: "m/a", Value: []byte("3"), Epoch: 1}); err != nil {
				t.Fatalf("a write after the seed: %v", err)
			}
			if rec, _, err := c.stores[2].Get(ctx, "m/a"); err != nil || string(rec.Value) != "3" {
				t.Errorf("m/a after a write: %q %v", rec.Value, err)
			}
		})
	}
}
