package remember

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// majorities: plain majorities, so that 2 of 3 replicas make a quorum; refill markers in
// dir (none when empty).
func majorities(dir string) func(*Config) {
	return func(cfg *Config) {
		cfg.WriteMajorityPlus, cfg.ReadMajorityPlus, cfg.MajorityMinCap = PlusNone, PlusNone, 1
		if dir != "" {
			cfg.RefillMarker = filepath.Join(dir, filepath.Base(cfg.Dir)+".refill")
		}
	}
}

func writeKeys(t *testing.T, s *Store, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("%s%04d", prefix, i)
		if err := s.Write(testContext(t), Write{Key: k, Value: []byte(k)}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

// holdsAll reports whether s's own replica holds every key.
func holdsAll(t *testing.T, s *Store, keys []string) bool {
	es, err := readEntries(s.db, keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.absent() {
			return false
		}
	}
	return true
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRebuiltReplicaRefillsBeforeItCounts: a replica whose store was moved aside (the refill
// marker written, as `shardctl data rebuild` does) answers reads with ErrRefilling until it
// holds what N - majority + 1 peers hold — with one of its two peers down it does not
// finish, and a read that would need its answer fails rather than miss a write — and then
// counts again, holding every acknowledged write, its marker gone.
func TestRebuiltReplicaRefillsBeforeItCounts(t *testing.T) {
	markers := t.TempDir()
	returning := false
	c := newCluster(t, 3, func(cfg *Config) {
		majorities(markers)(cfg)
		cfg.Returning = returning
	})
	keys := writeKeys(t, c.stores[0], "a", 300)
	returning = true
	c.closeStore(2)
	if err := os.Rename(c.dirs[2], c.dirs[2]+".damaged"); err != nil {
		t.Fatal(err)
	}
	marker := c.config(2).RefillMarker
	if err := os.WriteFile(marker, []byte("rebuilt by the test"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.closeStore(1)
	s2 := c.open(2)
	if st := s2.Refill(); !st.Active || st.Reason != "rebuilt by the test" {
		t.Fatalf("Refill() = %+v", st)
	}
	// 0 answers, 2 refuses, 1 is down: no read quorum, and the reason is given.
	_, _, err := s2.Get(testContext(t), keys[0])
	if !errors.Is(err, ErrNoQuorum) || !strings.Contains(err.Error(), "refilling") {
		t.Fatalf("read while refilling with one peer down: %v", err)
	}
	more := writeKeys(t, c.stores[0], "b", 50) // stored on 0 and 2: writes count
	if st := s2.Refill(); !st.Active || st.Need != 2 {
		t.Fatalf("refilled from one peer of three: %+v", st)
	}
	c.open(1)
	waitUntil(t, "the replica refilled", func() bool { return !s2.Refill().Active })
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker left: %v", err)
	}
	if !holdsAll(t, s2, append(keys, more...)) {
		t.Fatal("refilled replica lacks acknowledged writes")
	}
	if rec, found, err := s2.Get(testContext(t), keys[7]); err != nil || !found || string(rec.Value) != keys[7] {
		t.Fatalf("read after the refill: %v %v %v", rec, found, err)
	}
}

// TestFarFewerKeysRefills: a replica that comes back holding far fewer keys than a peer (its
// store replaced by an empty one, no marker) warns, refills, and holds everything after.
func TestFarFewerKeysRefills(t *testing.T) {
	markers := t.TempDir()
	returning := false
	c := newCluster(t, 3, func(cfg *Config) {
		majorities(markers)(cfg)
		cfg.Returning = returning // a new cluster: its stores start empty
	})
	keys := writeKeys(t, c.stores[0], "a", 200)
	c.closeStore(2)
	if err := os.RemoveAll(c.dirs[2]); err != nil {
		t.Fatal(err)
	}
	returning = true
	s2 := c.open(2)
	waitUntil(t, "the replica refilled", func() bool {
		st := s2.Refill()
		return !st.Active && st.Reason != ""
	})
	if st := s2.Refill(); !strings.Contains(st.Reason, "far fewer") {
		t.Fatalf("Refill() = %+v", st)
	}
	if !holdsAll(t, s2, keys) {
		t.Fatal("refilled replica lacks acknowledged writes")
	}
}

// TestNewReplicaIsNotCompared: a new member's empty store counts at once: it catches up by
// anti-entropy and never refills.
func TestNewReplicaIsNotCompared(t *testing.T) {
	c := newCluster(t, 2, majorities(""))
	keys := writeKeys(t, c.stores[0], "a", 100)
	c.closeStore(1)
	if err := os.RemoveAll(c.dirs[1]); err != nil {
		t.Fatal(err)
	}
	s1 := c.open(1) // not Returning: a new member
	waitUntil(t, "the new replica caught up", func() bool { return holdsAll(t, s1, keys) })
	if st := s1.Refill(); st.Active || st.Reason != "" {
		t.Fatalf("a new replica refills: %+v", st)
	}
}
