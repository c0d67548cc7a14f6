package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestBenchFailover (opt in: SHARDMESH_BENCH_FAILOVER=1; scripts/bench runs it): 3 real
// daemons with durable counters (the sharding flags: 100 shards, split-brain resolver
// stable-after 2 s, or SHARDMESH_BENCH_STABLE_AFTER; the default failure detector: heartbeat
// 1 s, acceptable pause 3 s).
// Every counter is incremented once, then the member that is not the coordinator's and holds
// a third of the shards is killed with SIGKILL. Measured from the kill, as the first member
// sees it: when the failure detector marks the victim unreachable, when the split-brain
// resolver downs it, when it is removed (its shards are free then), and when the last of the victim's counters answers again elsewhere (each asked
// until it answers; every answer must still be 1: the increment was durable). Prints a
// benchmark line for scripts/bench.
func TestBenchFailover(t *testing.T) {
	if os.Getenv("SHARDMESH_BENCH_FAILOVER") == "" {
		t.Skip("set SHARDMESH_BENCH_FAILOVER=1 to run (3 daemons, kill -9)")
	}
	flags, name := shardingFlags, "BenchmarkFailoverKill9"
	if sa := os.Getenv("SHARDMESH_BENCH_STABLE_AFTER"); sa != "" { // what the resolver's wait costs
		flags = append(slices.Clone(flags), "--set", "cluster.split-brain-resolver.stable-after="+sa)
		name += "/stable-after=" + sa
	}
	c := newCluster(t, flags...)
	seed := c.start("m1")
	ds := []*daemon{seed, c.start("m2", "--join", seed.addr()), c.start("m3", "--join", seed.addr())}
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	cl := client(t, seed)
	if _, errs := askAll(cl, ids(600), "inc"); len(errs) > 0 {
		t.Fatalf("%d increments failed, first: %v", len(errs), errs[0])
	}
	if !waitFor(15*time.Second, func() bool { c := shardCounts(ds); return spread(c) <= 1 && total(c) == 100 }) {
		t.Fatalf("not balanced before the kill: %v", shardCounts(ds))
	}
	victim := ds[2]
	vcl := client(t, victim)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	st, err := vcl.RegionState(ctx, "counter")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	var onVictim []string
	for _, s := range st.Shards {
		onVictim = append(onVictim, s.Entities...)
	}
	if len(onVictim) == 0 {
		t.Fatalf("the victim hosts no counters: %v", shardCounts(ds))
	}
	victimID := victim.peerID()

	victim.kill()
	killed := time.Now()
	var detect, down, removed time.Duration
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for time.Since(killed) < time.Minute {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			m, err := cl.Members(ctx)
			cancel()
			if err == nil {
				present := false
				for _, mi := range m.Members {
					if mi.Node != victimID {
						continue
					}
					present = mi.Status != "Removed"
					if !mi.Reachable && detect == 0 {
						detect = time.Since(killed)
					}
					if (mi.Status == "Down" || mi.Status == "Removed") && down == 0 {
						down = time.Since(killed)
					}
				}
				if !present {
					removed = time.Since(killed)
					detect, down = cmp.Or(detect, removed), cmp.Or(down, removed)
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	var mu sync.Mutex
	var last time.Duration
	var wrong []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, id := range onVictim {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(killed) < time.Minute {
				sem <- struct{}{}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				reply, err := cl.Ask(ctx, "counter", id, []byte("get"))
				cancel()
				<-sem
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				took := time.Since(killed)
				mu.Lock()
				last = max(last, took)
				if string(reply) != "1" {
					wrong = append(wrong, fmt.Sprintf("%s=%s", id, reply))
				}
				mu.Unlock()
				return
			}
			mu.Lock()
			wrong = append(wrong, id+" never answered")
			mu.Unlock()
		}()
	}
	wg.Wait()
	<-watchDone
	if len(wrong) > 0 {
		t.Fatalf("%d of the victim's %d counters wrong after the failover, e.g. %v", len(wrong), len(onVictim), wrong[:min(5, len(wrong))])
	}
	if removed == 0 {
		t.Fatalf("the first member never saw the victim removed (unreachable after %v, down after %v)", detect, down)
	}
	t.Logf("kill -9 of a member with %d counters: unreachable after %v, downed after %v, removed after %v, every counter answers again after %v",
		len(onVictim), detect.Round(time.Millisecond), down.Round(time.Millisecond), removed.Round(time.Millisecond), last.Round(time.Millisecond))
	if os.Getenv("SHARDMESH_BENCH_LOG") != "" {
		t.Logf("killed at %s; the first member's log:\n%s", killed.Format("15:04:05.000"), seed.log.String())
	}
	// A benchmark line, for scripts/bench's parser.
	fmt.Printf("%s\t1\t%s detect-s\t%s down-s\t%s removed-s\t%s failover-s\t%s over-detect-s\t%d entities\n",
		name, secs(detect), secs(down), secs(removed), secs(last), secs(last-detect), len(onVictim))
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
