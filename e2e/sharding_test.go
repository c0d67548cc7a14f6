package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/admin"
)

// shardingFlags: 100 shards, quick rebalance rounds with the new algorithm, limits not
// binding (so balance comes within two rounds), a short stable-after for kill -9 tests.
var shardingFlags = []string{
	"--entity-types", "counter,echo",
	"--set", "sharding.number-of-shards=100",
	"--set", "sharding.rebalance-interval=2s",
	"--set", "sharding.least-shard-allocation-strategy.rebalance-absolute-limit=1000",
	"--set", "sharding.least-shard-allocation-strategy.rebalance-relative-limit=1",
	"--set", "cluster.split-brain-resolver.stable-after=2s",
}

// withoutSet returns flags without their --set of key: the daemons take key's default.
func withoutSet(flags []string, key string) []string {
	out := make([]string, 0, len(flags))
	for i := 0; i < len(flags); i++ {
		if flags[i] == "--set" && i+1 < len(flags) && strings.HasPrefix(flags[i+1], key+"=") {
			i++
			continue
		}
		out = append(out, flags[i])
	}
	return out
}

// client connects an admin client to d.
func client(t *testing.T, d *daemon) *admin.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := admin.Dial(ctx, admin.ClientConfig{Node: d.addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// askAll asks every counter in ids once with msg, 32 at a time, and returns the replies and
// the errors.
func askAll(cl *admin.Client, ids []string, msg string) (map[string]string, []error) {
	var mu sync.Mutex
	replies := map[string]string{}
	var errs []error
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for _, id := range ids {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			reply, err := cl.Ask(ctx, "counter", id, []byte(msg))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				return
			}
			replies[id] = string(reply)
		}()
	}
	wg.Wait()
	return replies, errs
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "counter-" + strconv.Itoa(i)
	}
	return out
}

// shardCounts returns how many counter shards each daemon hosts.
func shardCounts(ds []*daemon) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cl, err := admin.Dial(ctx, admin.ClientConfig{Node: d.addr()})
		if err != nil {
			cancel()
			out[i] = -1
			continue
		}
		st, err := cl.RegionState(ctx, "counter")
		cl.Close()
		cancel()
		if err != nil {
			out[i] = -1
			continue
		}
		out[i] = len(st.Shards)
	}
	return out
}

func spread(counts []int) int {
	lo, hi := counts[0], counts[0]
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	return hi - lo
}

// load asks counters continuously from cl until stop is closed, counting asks and failures.
func load(cl *admin.Client, stop <-chan struct{}, asked, failed *atomic.Int64, firstErr *atomic.Value) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				_, err := cl.Ask(ctx, "counter", fmt.Sprintf("load-%d-%d", w, i%200), []byte("inc"))
				cancel()
				asked.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	return &wg
}

func TestShardingAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 5 daemons, joins, leave, kill -9")
	}
	c := newCluster(t, shardingFlags...)
	seed := c.start("m1")
	ds := []*daemon{seed, c.start("m2", "--join", seed.addr()), c.start("m3", "--join", seed.addr())}
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	cl := client(t, seed)

	// 10,000 distinct counters, each incremented once: every reply is 1.
	start := time.Now()
	replies, errs := askAll(cl, ids(10000), "inc")
	if len(errs) > 0 {
		t.Fatalf("%d of 10,000 asks failed, first: %v", len(errs), errs[0])
	}
	for id, r := range replies {
		if r != "1" {
			t.Fatalf("%s answered %q, want 1", id, r)
		}
	}
	t.Logf("10,000 asks to distinct counters in %v, all correct; shards per member %v", time.Since(start).Round(time.Millisecond), shardCounts(ds))

	// Two more members join under load: shards spread to max−min ≤ 1 within two rebalance
	// rounds, and no ask fails meanwhile.
	stop := make(chan struct{})
	var asked, failed atomic.Int64
	var firstErr atomic.Value
	loaders := load(cl, stop, &asked, &failed, &firstErr)
	ds = append(ds, c.start("m4", "--join", seed.addr()), c.start("m5", "--join", seed.addr()))
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 5) }) {
		t.Fatal("5 members did not agree")
	}
	joined := time.Now()
	if !waitFor(2*2*time.Second+3*time.Second, func() bool { return spread(shardCounts(ds)) <= 1 }) {
		t.Fatalf("not balanced within two rebalance rounds: %v", shardCounts(ds))
	}
	t.Logf("balanced %v after the joins: shards per member %v", time.Since(joined).Round(time.Millisecond), shardCounts(ds))
	time.Sleep(time.Second)

	// SIGTERM a member: its shards move, no ask fails.
	leaver := ds[2]
	leaver.signal(syscall.SIGTERM)
	if code, ok := leaver.wait(30 * time.Second); !ok || code != 0 {
		t.Fatalf("SIGTERM: exited=%v code=%d\n%s", ok, code, leaver.log.String())
	}
	rest := []*daemon{ds[0], ds[1], ds[3], ds[4]}
	if !waitFor(10*time.Second, func() bool { return allAgreeUp(rest, 4) && total(shardCounts(rest)) >= 100 }) {
		t.Fatalf("the leaver's shards did not move: %v", shardCounts(rest))
	}
	close(stop)
	loaders.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d asks failed during joins and a graceful leave; first: %v", failed.Load(), asked.Load(), firstErr.Load())
	}
	t.Logf("%d asks during two joins and a SIGTERM, none failed; shards per member %v", asked.Load(), shardCounts(rest))

	// kill -9 a member: once it is downed and removed, its shards are allocated again and
	// every counter answers.
	victim := rest[3]
	victim.kill()
	killed := time.Now()
	rest = rest[:3]
	if !waitFor(30*time.Second, func() bool {
		_, errs := askAll(cl, ids(500), "get")
		return len(errs) == 0
	}) {
		t.Fatal("counters did not answer again after kill -9")
	}
	t.Logf("every counter answers again %v after kill -9; shards per member %v", time.Since(killed).Round(time.Millisecond), shardCounts(rest))
}

func total(counts []int) int {
	s := 0
	for _, c := range counts {
		s += c
	}
	return s
}

// TestPassivationConfiguredOnTheDaemon: a daemon whose config file selects a strategy of
// its own (at most 2 active counters; one shard, so the shard has the whole limit) and whose
// --set gives it a 1 s idle timeout passivates for real: a counter left alone for 2 s, or
// pushed out by two others, starts again from 0.
func TestPassivationConfiguredOnTheDaemon(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "shardmesh.yaml")
	if err := os.WriteFile(cfg, []byte(`
sharding:
  number-of-shards: 1
  passivation:
    strategy: two
    two:
      active-entity-limit: 2
      replacement:
        policy: least-recently-used
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "--entity-types", "counter", "--config", cfg,
		"--set", "sharding.passivation.two.idle-entity.timeout=1s")
	d := c.start("m1")
	if !waitFor(10*time.Second, func() bool { return allAgree([]*daemon{d}, 1) }) {
		t.Fatal("member did not come up")
	}
	cl := client(t, d)
	ask := func(id, msg string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		reply, err := cl.Ask(ctx, "counter", id, []byte(msg))
		if err != nil {
			t.Fatalf("ask %s %s: %v", id, msg, err)
		}
		return string(reply)
	}
	alive := func(id string) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		loc, err := cl.Locate(ctx, "counter", id)
		if err != nil {
			t.Fatalf("locate %s: %v", id, err)
		}
		return loc.Alive
	}
	ask("a", "inc")
	ask("a", "inc")
	if !alive("a") {
		t.Fatal("a is not alive after two messages")
	}
	time.Sleep(2 * time.Second) // idle for twice the timeout: passivated
	if alive("a") {
		t.Fatal("a still alive after 2 s idle")
	}
	// The counter's count is durable state: the next incarnation goes on from it.
	if got := ask("a", "get"); got != "2" {
		t.Fatalf("a = %s in its next incarnation, want 2", got)
	}
	ask("b", "inc")
	ask("c", "inc") // the limit of 2: a, least recently used, stops
	if !alive("b") || !alive("c") {
		t.Fatal("b and c should run")
	}
	if alive("a") {
		t.Fatal("a still alive after b and c, with a limit of 2")
	}
}
