package shardmesh_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/p2p"
)

// workerPair starts two members: a proxy (no role) and a worker (role "worker") that hosts
// every entity of a type with role worker, so everything the proxy sends crosses the network.
func workerPair(tb testing.TB) (proxySys, workerSys *shardmesh.System) {
	tb.Helper()
	i := 0
	systems := startMembersWith(tb, 2, func(c *config.Config) {
		c.Sharding.Role = "worker"
		if i == 1 {
			c.Node.Roles = []string{"worker"}
		}
		i++
	})
	return systems[0], systems[1]
}

func echoType(role string) shardmesh.Entity[int, int] {
	return shardmesh.Entity[int, int]{
		Key: shardmesh.NewEntityTypeKey[int, int]("echo"),
		New: func(*shardmesh.Context) shardmesh.Behavior[int, int] {
			return shardmesh.BehaviorFunc[int, int](func(_ *shardmesh.Context, m int) (int, error) { return m, nil })
		},
		MessageCodec: intCodec{},
		ReplyCodec:   intCodec{},
		Role:         role,
	}
}

// intCodec encodes an int in decimal: cheap, so the benchmark measures sharding, not JSON.
type intCodec struct{}

func (intCodec) Marshal(v int) ([]byte, error)   { return strconv.AppendInt(nil, int64(v), 10), nil }
func (intCodec) Unmarshal(b []byte) (int, error) { return strconv.Atoi(string(b)) }

// rawEcho starts a raw framed-stream echo between two fresh p2p hosts and returns a function
// doing one 64-byte round trip on long-lived stream number i (one stream per caller).
func rawEcho(tb testing.TB) func(i int) time.Duration {
	tb.Helper()
	ctx := context.Background()
	newHost := func() *p2p.Host {
		key, _, _ := crypto.GenerateEd25519Key(nil)
		h, err := p2p.New(ctx, p2p.Config{Identity: key})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { h.Close() })
		return h
	}
	server, client := newHost(), newHost()
	server.HandleStream("/bench/echo/1", func(st *p2p.Stream) {
		for {
			f, err := st.ReadFrame()
			if err != nil {
				return
			}
			if st.WriteFrame(f) != nil {
				return
			}
		}
	})
	id, err := client.Connect(ctx, server.Addrs()[0])
	if err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	streams := map[int]*p2p.Stream{}
	payload := make([]byte, 64)
	return func(i int) time.Duration {
		mu.Lock()
		st := streams[i]
		if st == nil {
			var err error
			if st, err = client.OpenStream(ctx, id, "/bench/echo/1"); err != nil {
				mu.Unlock()
				tb.Fatal(err)
			}
			streams[i] = st
		}
		mu.Unlock()
		start := time.Now()
		if err := st.WriteFrame(payload); err != nil {
			tb.Fatal(err)
		}
		if _, err := st.ReadFrame(); err != nil {
			tb.Fatal(err)
		}
		return time.Since(start)
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[int(float64(len(d)-1)*p)]
}

// BenchmarkRemoteAsk: ask latency to an entity on another member, next to a raw libp2p
// framed-stream round trip measured in the same run. Reports p50/p99 of both and the ratio.
func BenchmarkRemoteAsk(b *testing.B) {
	proxySys, workerSys := workerPair(b)
	if _, err := shardmesh.Init(workerSys, echoType("worker")); err != nil {
		b.Fatal(err)
	}
	r, err := shardmesh.Init(proxySys, echoType("worker"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	refs := make([]shardmesh.EntityRef[int, int], 100)
	for i := range refs {
		refs[i] = r.EntityRefFor("e" + strconv.Itoa(i))
		if _, err := refs[i].Ask(ctx, i); err != nil {
			b.Fatal(err)
		}
	}
	raw := rawEcho(b)
	for range 200 {
		raw(0) // warm
	}
	asks := make([]time.Duration, 0, b.N)
	raws := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := refs[i%len(refs)].Ask(ctx, i); err != nil {
			b.Fatal(err)
		}
		asks = append(asks, time.Since(start))
		raws = append(raws, raw(0))
	}
	b.StopTimer()
	a50, a99 := percentile(asks, 0.5), percentile(asks, 0.99)
	r50, r99 := percentile(raws, 0.5), percentile(raws, 0.99)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 } // to 0.001 µs: whole µs made the ratios coarse
	b.ReportMetric(us(a50), "ask-p50-µs")
	b.ReportMetric(us(a99), "ask-p99-µs")
	b.ReportMetric(us(r50), "raw-p50-µs")
	b.ReportMetric(us(r99), "raw-p99-µs")
	b.ReportMetric(float64(a50)/float64(r50), "p50-ratio")
	b.ReportMetric(float64(a99)/float64(r99), "p99-ratio")
}

// BenchmarkConcurrentAskers: 64 goroutines asking entities on another member, next to 64
// goroutines doing raw framed-stream round trips (one stream each) in the same run.
func BenchmarkConcurrentAskers(b *testing.B) {
	proxySys, workerSys := workerPair(b)
	if _, err := shardmesh.Init(workerSys, echoType("worker")); err != nil {
		b.Fatal(err)
	}
	r, err := shardmesh.Init(proxySys, echoType("worker"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range 640 {
		if _, err := r.EntityRefFor("e"+strconv.Itoa(i)).Ask(ctx, i); err != nil {
			b.Fatal(err)
		}
	}
	run := func(each func(worker, i int)) float64 {
		per := max(b.N/64, 1)
		start := time.Now()
		var wg sync.WaitGroup
		for w := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					each(w, i)
				}
			}()
		}
		wg.Wait()
		return float64(per*64) / time.Since(start).Seconds()
	}
	raw := rawEcho(b)
	b.ResetTimer()
	askRate := run(func(w, i int) {
		if _, err := r.EntityRefFor("e"+strconv.Itoa(w*10+i%10)).Ask(ctx, i); err != nil {
			b.Error(err)
		}
	})
	rawRate := run(func(w, _ int) { raw(w) })
	b.StopTimer()
	b.ReportMetric(askRate, "asks/s")
	b.ReportMetric(rawRate, "raw-req/s")
	b.ReportMetric(askRate/rawRate, "ratio")
}

// TestMillionIdleEntities (opt in: SHARDMESH_TEST_1M=1, ~1.5 GB free; SHARDMESH_TEST_1M=N
// for another count): one member holding 1,000,000 idle entities, told as fast as one
// goroutine can (so the region's buffer-size is exceeded at start and the sender waits);
// reports heap and RSS per entity. Target: RSS ≤ 1 GiB.
func TestMillionIdleEntities(t *testing.T) {
	if os.Getenv("SHARDMESH_TEST_1M") == "" {
		t.Skip("set SHARDMESH_TEST_1M=1 to run (a million entities on one member)")
	}
	var handled atomic.Int64
	sys := startMembers(t, 1)[0]
	typ := sinkType(&handled)
	typ.MessageCodec, typ.ReplyCodec = intCodec{}, intCodec{}
	r, err := shardmesh.Init(sys, typ)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := rss()
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("SHARDMESH_TEST_1M")); err == nil && v > 1 {
		n = v // a smaller count to investigate
	}
	start := time.Now()
	for i := range n {
		if err := r.EntityRefFor("entity-" + strconv.Itoa(i)).Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	for handled.Load() < int64(n) {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if path := os.Getenv("SHARDMESH_TEST_1M_HEAPPROFILE"); path != "" {
		writeHeapProfile(t, path) // what the idle entities hold, while they are alive
	}
	heap := after.HeapInuse - before.HeapInuse
	total := rss()
	t.Logf("%d entities started in %v (%.0f/s); heap +%d MiB (%.0f B/entity); process RSS %d MiB (+%d MiB)",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), heap>>20, float64(heap)/float64(n), total>>20, (total-rssBefore)>>20)
	// A benchmark line, for scripts/bench's parser.
	fmt.Printf("BenchmarkMillionIdleEntities\t1\t%d entities\t%.0f heap-B/entity\t%d rss-MiB\t%.0f rss-B/entity\t%.0f starts/s\n",
		n, float64(heap)/float64(n), total>>20, float64(total-rssBefore)/float64(n), float64(n)/took.Seconds())
	if total > 1<<30 {
		t.Errorf("RSS %d MiB exceeds 1 GiB", total>>20)
	}
}

// writeHeapProfile writes the heap profile (in-use objects at the last GC) to path.
func writeHeapProfile(tb testing.TB, path string) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		tb.Fatal(err)
	}
}

// rss returns the process's resident set size in bytes.
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	pages, _ := strconv.ParseUint(fields[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
