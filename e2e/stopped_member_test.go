package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestStoppedMemberStallsNoWrite: 3 real daemons with durable counters (replication factor
// 3, so each shard's replica set is all three and its quorum two). One member is stopped
// with SIGSTOP — not crashed, not yet downed: the split-brain resolver waits 60 s — and for
// 20 s (5 s with -short) counters homed on the other two are incremented without pause.
// Every increment must succeed (a stopped member is a minority of every replica set), and
// after SIGCONT every counter holds exactly its acknowledged increments. Before replica
// sets every write needed every member and each one timed out.
//
// With SHARDMESH_BENCH_SIGSTOP=1 it prints a benchmark line for scripts/bench: the share of
// asks that succeeded and their latency percentiles.
func TestStoppedMemberStallsNoWrite(t *testing.T) {
	window := 20 * time.Second
	if testing.Short() {
		window = 5 * time.Second
	}
	flags := append(slices.Clone(shardingFlags), "--set", "cluster.split-brain-resolver.stable-after=60s")
	c := newCluster(t, flags...)
	seed := c.start("m1")
	ds := []*daemon{seed, c.start("m2", "--join", seed.addr()), c.start("m3", "--join", seed.addr())}
	if !waitFor(15*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	cl := client(t, seed)
	if _, errs := askAll(cl, ids(300), "inc"); len(errs) > 0 {
		t.Fatalf("%d increments failed before the stop, first: %v", len(errs), errs[0])
	}
	if !waitFor(20*time.Second, func() bool { c := shardCounts(ds); return spread(c) <= 1 && total(c) == 100 }) {
		t.Fatalf("not balanced before the stop: %v", shardCounts(ds))
	}
	// The counters homed on m1 and m2, asked through m1 (m2's are one hop away).
	var healthy []string
	for _, d := range ds[:2] {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := client(t, d).RegionState(ctx, "counter")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st.Shards {
			healthy = append(healthy, s.Entities...)
		}
	}
	if len(healthy) < 100 {
		t.Fatalf("only %d counters on the two members that stay", len(healthy))
	}

	stopped := ds[2]
	stopped.signal(syscall.SIGSTOP)
	t.Cleanup(func() { stopped.signal(syscall.SIGCONT) })
	start := time.Now()
	var mu sync.Mutex
	acked := map[string]int{}
	unknown := map[string]int{}
	var took []time.Duration
	var failures []string
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Since(start) < window; i += 8 {
				id := healthy[i%len(healthy)]
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				t0 := time.Now()
				_, err := cl.Ask(ctx, "counter", id, []byte("inc"))
				d := time.Since(t0)
				cancel()
				mu.Lock()
				took = append(took, d)
				if err != nil {
					unknown[id]++
					failures = append(failures, fmt.Sprintf("%s after %v: %v", id, d.Round(time.Millisecond), err))
				} else {
					acked[id]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stopped.signal(syscall.SIGCONT)

	slices.Sort(took)
	pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	ok := len(took) - len(failures)
	share := float64(ok) / float64(len(took))
	t.Logf("with one of 3 members stopped for %v: %d of %d increments succeeded (%.2f%%), p50 %v, p99 %v, max %v",
		window, ok, len(took), 100*share, pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), took[len(took)-1].Round(time.Millisecond))
	if share < 0.99 {
		t.Errorf("%d of %d increments failed while one member was stopped, first: %s", len(failures), len(took), failures[0])
	}

	// Every counter holds its acknowledged increments (one before the stop, plus the
	// window's); one whose increment failed may hold it or not.
	for _, id := range healthy {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		reply, err := cl.Ask(ctx, "counter", id, []byte("get"))
		cancel()
		if err != nil {
			t.Fatalf("get %s after SIGCONT: %v", id, err)
		}
		n, _ := strconv.Atoi(string(reply))
		if lo, hi := 1+acked[id], 1+acked[id]+unknown[id]; n < lo || n > hi {
			t.Fatalf("counter %s = %d after the stop, want %d..%d (acknowledged..plus failed)", id, n, lo, hi)
		}
	}
	if os.Getenv("SHARDMESH_BENCH_SIGSTOP") != "" {
		fmt.Printf("BenchmarkStoppedMember\t%d\t%.4f ok-share\t%.3f p50-ms\t%.3f p99-ms\t%d failed\n",
			len(took), share, ms(pct(0.5)), ms(pct(0.99)), len(failures))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
