package remember

import (
	"fmt"
	"strings"
	"testing"
)

// TestLocalRekey: Rekey moves records, tombstones and fence-floor-only keys to their new
// keys as they are, in commits with progress, leaves the keys it does not map alone, moves
// nothing when run again, and the store opened afterwards reads the moved records under
// their new keys (their summaries moved with them). The keys are a shard unit's (the tools
// rekey entity state; the metadata is the metadata group's, changed online).
func TestLocalRekey(t *testing.T) {
	c := unitCluster(t, 1, nil)
	ctx := testContext(t)
	c.stores[0].Host(Unit{Type: "t", Shard: "1"}, 3)
	const n = 12000
	var ws []Write
	for i := range n {
		ws = append(ws, Write{Key: fmt.Sprintf("u/1/old/e%05d", i), Value: []byte(fmt.Sprint(i)), Epoch: 3})
		if len(ws) == 4000 {
			if err := c.stores[0].Write(ctx, ws...); err != nil {
				t.Fatal(err)
			}
			ws = ws[:0]
		}
	}
	if err := c.stores[0].Write(ctx, Write{Key: "u/1/old/e00007", Delete: true, Epoch: 3}, Write{Key: "u/1/keep/x", Value: []byte("k"), Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.stores[0].GetFenced(ctx, "u/1/old/fenced", 9); err != nil {
		t.Fatal(err)
	}
	before := c.local(0, "u/1/old/e00042")
	c.closeStore(0)

	l, err := OpenLocal(c.dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	rekey := func(key string) (string, bool) {
		rest, ok := strings.CutPrefix(key, "u/1/old/")
		if !ok {
			return "", false
		}
		return "u/1/new/" + rest, true
	}
	var calls []int
	moved, err := l.Rekey("u/1/old/", rekey, func(done int) { calls = append(calls, done) })
	if err != nil || moved != n+1 {
		t.Fatalf("Rekey moved %d (%v), want %d", moved, err, n+1)
	}
	if len(calls) < 2 || calls[len(calls)-1] != n+1 {
		t.Errorf("progress calls %v", calls)
	}
	entries := map[string]Entry{}
	if err := l.Entries("u/1/", func(e Entry) error { entries[e.Key] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	for k := range entries {
		if strings.HasPrefix(k, "u/1/old/") {
			t.Fatalf("%q left under the old prefix", k)
		}
	}
	if e := entries["u/1/new/e00007"]; !e.Deleted {
		t.Errorf("tombstone moved as %+v", e)
	}
	if e := entries["u/1/new/fenced"]; e.Floor != 9 || !e.Version.IsZero() {
		t.Errorf("fence-only key moved as %+v", e)
	}
	if _, ok := entries["u/1/keep/x"]; !ok || len(entries) != n+2 {
		t.Errorf("%d keys after, keep/x there: %v", len(entries), ok)
	}
	again, err := l.Rekey("u/1/old/", rekey, nil)
	if err != nil || again != 0 {
		t.Errorf("second Rekey moved %d (%v)", again, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	s := c.open(0)
	s.Host(Unit{Type: "t", Shard: "1"}, 3)
	ctx = testContext(t) // a wait of its own: the writes above may have taken long on a loaded machine
	rec, found, err := s.Get(ctx, "u/1/new/e00042")
	if err != nil || !found || string(rec.Value) != "42" || rec.Version != before.rec.Version {
		t.Fatalf("Get of a moved record: %+v found=%v err=%v (was %+v)", rec, found, err, before.rec)
	}
	if _, found, err := s.Get(ctx, "u/1/old/e00042"); err != nil || found {
		t.Errorf("the old key still reads: found=%v err=%v", found, err)
	}
	if err := s.Write(ctx, Write{Key: "u/1/new/fenced", Value: []byte("x"), Epoch: 8}); err == nil {
		t.Error("a write below the moved fence floor was accepted")
	}
}
