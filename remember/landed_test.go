package remember

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestHostHearsOfWhatOthersWrite: real stores on Badger and libp2p. A record another member
// writes in a unit this member hosts is reported to it (Config.Landed) once stored here;
// its own writes are not, nor are others' writes to a member that does not host the unit.
func TestHostHearsOfWhatOthersWrite(t *testing.T) {
	var mu sync.Mutex
	landed := map[string][]string{} // by store directory
	c := unitCluster(t, 3, func(cfg *Config) {
		dir := cfg.Dir
		cfg.Landed = func(keys []string) {
			mu.Lock()
			defer mu.Unlock()
			landed[dir] = append(landed[dir], keys...)
		}
	})
	ctx := testContext(t)
	u := Unit{Type: "t", Shard: "1"}
	c.stores[0].Host(u, 1)
	if err := c.stores[0].Write(ctx, Write{Key: "u/1/own", Value: []byte("a"), Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.stores[1].Write(ctx, Write{Key: "u/1/theirs", Value: []byte("b"), Epoch: 1}, Write{Key: "u/2/elsewhere", Value: []byte("c"), Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(landed[c.dirs[0]])
		mu.Unlock()
		if slices.Contains(got, "u/1/theirs") {
			// (twice at most: by the write, and by anti-entropy if it ran while the write
			// was on its way)
			if slices.ContainsFunc(got, func(k string) bool { return k != "u/1/theirs" }) {
				t.Errorf("the host heard of %q, want only u/1/theirs", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host did not hear of u/1/theirs (heard %q)", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, i := range []int{1, 2} {
		if got := landed[c.dirs[i]]; len(got) > 0 {
			t.Errorf("member %d hosts nothing but heard of %q", i, got)
		}
	}
}
