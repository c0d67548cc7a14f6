package shardmesh_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
)

// A full-cluster restart of remembered entities under each entity-recovery-strategy, on 3
// real members (libp2p, Badger, the replicated store with its default quorums). The
// entities recover their durable state when they start (a LoadState, one fenced quorum read
// each), as event-sourced entities replay theirs: every start costs the store a round.
//
//	SHARDMESH_RECOVERY_BENCH=100000 SHARDMESH_RECOVERY_BENCH_ROUNDS=3 go test -run TestRecoveryStrategies -v -timeout 90m .
//
// runs it with that many entities, every strategy once per round, interleaved (it takes
// minutes per restart; SHARDMESH_RECOVERY_BENCH_STRATEGIES=more adds a constant 1/100ms);
// without the variables the test runs a short version with 3,000 entities and two
// strategies.

// recoveringEntity loads its durable state when its incarnation starts.
type recoveringEntity struct{}

func (recoveringEntity) Receive(*shardmesh.Context, string) (int, error) { return 0, nil }

// recoveryLoads counts the state loads of recovering entities, and those that failed, and
// notes when the first one began.
type recoveryLoads struct {
	ok, failed atomic.Int64
	first      atomic.Int64 // unix nanoseconds
}

func recoveringType(loads *recoveryLoads) shardmesh.Entity[string, int] {
	return shardmesh.Entity[string, int]{
		Key: shardmesh.NewEntityTypeKey[string, int]("recovering"),
		New: func(ctx *shardmesh.Context) shardmesh.Behavior[string, int] {
			loads.first.CompareAndSwap(0, time.Now().UnixNano())
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := ctx.LoadState(sctx); err != nil {
				loads.failed.Add(1)
			} else {
				loads.ok.Add(1)
			}
			return recoveringEntity{}
		},
		MessageCodec:     shardmesh.StringCodec{},
		ReplyCodec:       shardmesh.JSONCodec[int]{},
		RememberEntities: true,
	}
}

// recoveryStrategy is one configuration of entity-recovery-strategy to measure.
type recoveryStrategy struct {
	name  string
	tweak func(*config.Remember)
}

func constantRecovery(every time.Duration, n int) recoveryStrategy {
	return recoveryStrategy{fmt.Sprintf("constant %d/%v per shard", n, every), func(r *config.Remember) {
		r.RecoveryStrategy, r.RecoveryFrequency, r.RecoveryNumberOfEntities = "constant", every, n
	}}
}

var (
	allRecovery      = recoveryStrategy{"all", func(r *config.Remember) { r.RecoveryStrategy = "all" }}
	adaptiveRecovery = recoveryStrategy{"adaptive (defaults)", func(r *config.Remember) { r.RecoveryStrategy = "adaptive" }}
)

// recoveryResult is what one restart measured.
type recoveryResult struct {
	strategy     string
	toRunning    time.Duration // from the first member's start to every entity's state loaded
	fromFirst    time.Duration // from the first entity start to every entity's state loaded
	loadFailures int64         // entity state loads that failed
	storeRounds  uint64
	failures     uint64 // store rounds that failed
	timeouts     uint64 // of them: no quorum in time, or the caller's deadline
	meanStart    time.Duration
	meanRound    time.Duration // store rounds' mean latency
	askP50       time.Duration // asks to random remembered entities during the recovery
	askP99       time.Duration
	asks         int
	askFailures  int     // of them: failed (within askTimeout)
	rate         float64 // adaptive: the budget's final rate (member 1)
}

const recoveryShards = 100

func TestRecoveryStrategies(t *testing.T) {
	entities, strategies := 3000, []recoveryStrategy{allRecovery, adaptiveRecovery}
	if v := os.Getenv("SHARDMESH_RECOVERY_BENCH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("SHARDMESH_RECOVERY_BENCH=%q: want a number of entities", v)
		}
		entities = n
		strategies = []recoveryStrategy{allRecovery, constantRecovery(100*time.Millisecond, 5), constantRecovery(100*time.Millisecond, 50), adaptiveRecovery}
		if v := os.Getenv("SHARDMESH_RECOVERY_BENCH_STRATEGIES"); v == "more" {
			strategies = slices.Insert(strategies, 1, constantRecovery(100*time.Millisecond, 1))
		}
	}
	rounds := 1
	if v := os.Getenv("SHARDMESH_RECOVERY_BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("SHARDMESH_RECOVERY_BENCH_ROUNDS=%q: want a number of rounds", v)
		}
		rounds = n
	}
	var order []recoveryStrategy // interleaved, so drift in the machine's load hits every strategy
	for range rounds {
		order = append(order, strategies...)
	}
	pristine := populateRecovery(t, entities)
	var results []recoveryResult
	for _, st := range order {
		r := restartWith(t, pristine, entities, st)
		results = append(results, r)
		t.Logf("%-28s all %d running %7.2fs after the start (%7.2fs after the first entity's); store rounds %d, failed %d (timeouts %d); entity loads failed %d; mean store round %v, mean start latency %v; final rate %.0f/s; asks during recovery %d, p50 %v, p99 %v, failed %d",
			r.strategy, entities, r.toRunning.Seconds(), r.fromFirst.Seconds(), r.storeRounds, r.failures, r.timeouts, r.loadFailures, r.meanRound.Round(100*time.Microsecond), r.meanStart.Round(time.Millisecond), r.rate,
			r.asks, r.askP50.Round(time.Millisecond), r.askP99.Round(time.Millisecond), r.askFailures)
	}
	for _, r := range results {
		if r.strategy == adaptiveRecovery.name && (r.timeouts > 0 || r.loadFailures > 0) {
			t.Errorf("adaptive recovery: %d store timeouts, %d failed entity loads", r.timeouts, r.loadFailures)
		}
	}
}

// populateRecovery starts 3 members, makes n remembered entities, closes the members and
// returns their data directories.
func populateRecovery(t *testing.T, n int) []string {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	loads := &recoveryLoads{}
	systems := startRecoveryCluster(t, dirs, loads, allRecovery)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	next := atomic.Int64{}
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sys := systems[w%len(systems)]
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				ref := shardmesh.EntityRefFor(sys, recoveringType(loads).Key, fmt.Sprint("r", i))
				for _, err := ref.Ask(ctx, "touch"); err != nil; _, err = ref.Ask(ctx, "touch") {
					if ctx.Err() != nil {
						t.Errorf("populating r%d: %v", i, err)
						return
					}
					failed.Add(1) // not acknowledged, so maybe not remembered: again
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Logf("populating: %d asks failed and were retried", failed.Load())
	}
	t.Logf("populated %d remembered entities in %v", n, time.Since(began).Round(time.Millisecond))
	for _, s := range systems {
		s.Close()
	}
	return dirs
}

// restartWith copies the data directories and starts 3 members on the copies with strategy
// st, and measures until every remembered entity has loaded its state.
func restartWith(t *testing.T, pristine []string, n int, st recoveryStrategy) recoveryResult {
	dirs := make([]string, len(pristine))
	for i, p := range pristine {
		dirs[i] = t.TempDir()
		if err := copyDir(dirs[i], p); err != nil {
			t.Fatal(err)
		}
	}
	loads := &recoveryLoads{}
	began := time.Now()
	systems := startRecoveryCluster(t, dirs, loads, st)
	probe := startProbe(systems, n)
	deadline := began.Add(20 * time.Minute)
	for loads.ok.Load()+loads.failed.Load() < int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d entities started within %v", st.name, loads.ok.Load()+loads.failed.Load(), n, deadline.Sub(began))
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := time.Now()
	lat, failed := probe.stop()
	r := recoveryResult{strategy: st.name, toRunning: done.Sub(began), fromFirst: done.Sub(time.Unix(0, loads.first.Load())), loadFailures: loads.failed.Load(),
		asks: len(lat) + failed, askFailures: failed}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.askP50, r.askP99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	if got := liveEntities(t, systems, "recovering"); got != n {
		t.Errorf("%s: %d live entities, want %d", st.name, got, n)
	}
	var starts uint64
	var startTime, roundTime time.Duration
	for _, s := range systems {
		sr := s.Node().StoreRounds()
		r.storeRounds += sr.Rounds
		r.failures += sr.Failures
		r.timeouts += sr.Timeouts
		starts += sr.RememberedStarts
		roundTime += sr.Time
		startTime += sr.StartTime
	}
	if starts > 0 {
		r.meanStart = startTime / time.Duration(starts)
	}
	if r.storeRounds > 0 {
		r.meanRound = roundTime / time.Duration(r.storeRounds)
	}
	r.rate, _ = systems[0].Node().RecoveryRate(context.Background(), "recovering")
	for _, s := range slices.Backward(systems) {
		s.Close()
	}
	return r
}

// startRecoveryCluster starts 3 members on dirs with the recovering type and strategy st.
func startRecoveryCluster(t *testing.T, dirs []string, loads *recoveryLoads, st recoveryStrategy) []*shardmesh.System {
	i := 0
	systems := startCluster(t, len(dirs), func(c *config.Config) {
		c.Node.DataDir = dirs[i]
		c.Membership.MinNrOfMembers = len(dirs)
		c.Sharding.NumberOfShards = recoveryShards
		st.tweak(&c.Sharding.Remember)
		i++
	})
	for _, s := range systems {
		if _, err := shardmesh.Init(s, recoveringType(loads)); err != nil {
			t.Fatal(err)
		}
	}
	return systems
}

// copyDir copies the files under src into dst, with their modes (the identity key must
// stay private to its owner).
func copyDir(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
}

// askTimeout bounds the probe's asks.
const askTimeout = 5 * time.Second

// probe asks random remembered entities while they recover, as clients would, at a fixed
// rate, and records how long the answers took; asks still out when it stops are not counted.
type probe struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	lat     []time.Duration
	failed  int
	stopped bool
}

// probeEvery is how often the probe asks (40 asks per second).
const probeEvery = 25 * time.Millisecond

func startProbe(systems []*shardmesh.System, n int) *probe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &probe{cancel: cancel}
	p.wg.Add(1)
	go func() { // open loop: the same asks at the same rate whatever the strategy
		defer p.wg.Done()
		rng := rand.New(rand.NewPCG(1, 7))
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ref := shardmesh.EntityRefFor(systems[i%len(systems)], recoveringType(nil).Key, fmt.Sprint("r", rng.IntN(n)))
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				actx, acancel := context.WithTimeout(context.Background(), askTimeout)
				defer acancel()
				t := time.Now()
				_, err := ref.Ask(actx, "touch")
				p.mu.Lock()
				defer p.mu.Unlock()
				if p.stopped {
					return // asked near the end: not counted
				}
				if err != nil {
					p.failed++
				} else {
					p.lat = append(p.lat, time.Since(t))
				}
			}()
		}
	}()
	return p
}

// stop ends the probe and returns the latencies of the answered asks and the failed count.
func (p *probe) stop() ([]time.Duration, int) {
	p.cancel()
	p.mu.Lock()
	p.stopped = true
	lat, failed := p.lat, p.failed
	p.mu.Unlock()
	p.wg.Wait()
	return lat, failed
}
