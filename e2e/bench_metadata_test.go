package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin"
)

// TestBenchMetadataCost (opt in: SHARDMESH_BENCH_META=1; seven daemons): what the metadata
// group costs on real daemons. Seven members start (cluster.voters 5: five voters, two
// members that hold no replica). Idle for SHARDMESH_BENCH_META_WINDOW (default 30 s), the
// frames of the group each member sends and receives per second, by its part (leader,
// follower, non-voter), from the shardmesh_metadata_* counters. Then 100 directive
// changes (rebalance pause and resume) through a member that is not a voter: the latency
// of the metadata writes they make, from shardmesh_metadata_call_duration_seconds (mean,
// and p50 / p99 as histogram_quantile estimates them), against the fsync of a 200-byte
// write on the daemons' disk in the same run. Prints benchmark lines too.
func TestBenchMetadataCost(t *testing.T) {
	if os.Getenv("SHARDMESH_BENCH_META") == "" {
		t.Skip("set SHARDMESH_BENCH_META=1 to run (7 daemons)")
	}
	window := 30 * time.Second
	if v := os.Getenv("SHARDMESH_BENCH_META_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SHARDMESH_BENCH_META_WINDOW=%s: %v", v, err)
		}
		window = d
	}
	const members, voters, changes = 7, 5, 100
	adminKey, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	adminID, err := peer.IDFromPrivateKey(adminKey)
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "--entity-types", "counter", "--set", "sharding.number-of-shards=100",
		"--set", fmt.Sprint("cluster.voters=", voters), "--metrics-listen", "127.0.0.1:0", "--admin-allow", adminID.String())
	seed := c.start("m1")
	ds := []*daemon{seed}
	for i := 2; i <= members; i++ {
		ds = append(ds, c.start(fmt.Sprint("m", i), "--join", seed.addr()))
	}
	scrapeAll := func() []scrape {
		ss := make([]scrape, len(ds))
		for i, d := range ds {
			ss[i] = d.scrapeMetrics()
		}
		return ss
	}
	var ss []scrape
	if !waitFor(60*time.Second, func() bool {
		if !allAgree(ds, members) {
			return false
		}
		ss = scrapeAll()
		return sumOver(ss, "shardmesh_metadata_voter") == voters && sumOver(ss, "shardmesh_metadata_leader") == 1 &&
			sumOver(ss, "shardmesh_metadata_replica") == voters
	}) {
		t.Fatalf("the metadata group did not settle on %d voters and a leader: voters %v, leaders %v, replicas %v",
			voters, sumOver(ss, "shardmesh_metadata_voter"), sumOver(ss, "shardmesh_metadata_leader"), sumOver(ss, "shardmesh_metadata_replica"))
	}
	time.Sleep(5 * time.Second) // the joins' own work settles

	// Idle.
	before, start := scrapeAll(), time.Now()
	time.Sleep(window)
	after, elapsed := scrapeAll(), time.Since(start).Seconds()
	parts := map[string][]float64{}
	var writesIdle, readsIdle float64
	for i := range ds {
		part := "non-voter"
		switch {
		case after[i].value("shardmesh_metadata_leader") == 1:
			part = "leader"
		case after[i].value("shardmesh_metadata_voter") == 1:
			part = "follower"
		}
		frames := func(s scrape) float64 {
			return s.value("shardmesh_metadata_frames_sent_total") + s.value("shardmesh_metadata_frames_received_total")
		}
		bytes := func(s scrape) float64 {
			return s.value("shardmesh_metadata_sent_bytes_total") + s.value("shardmesh_metadata_received_bytes_total")
		}
		perSec, bytesPerSec := (frames(after[i])-frames(before[i]))/elapsed, (bytes(after[i])-bytes(before[i]))/elapsed
		parts[part] = append(parts[part], perSec)
		calls := func(call string) float64 {
			return after[i].value("shardmesh_metadata_call_duration_seconds", "call", call) - before[i].value("shardmesh_metadata_call_duration_seconds", "call", call)
		}
		writesIdle += calls("write")
		reads := calls("get") + calls("scan")
		readsIdle += reads
		t.Logf("%s (%s): %.1f frames/s of the metadata group sent and received, %.0f B/s; its metadata reads %.1f/s",
			ds[i].name, part, perSec, bytesPerSec, reads/elapsed)
	}
	for _, part := range []string{"leader", "follower", "non-voter"} {
		fs := parts[part]
		slices.Sort(fs)
		if len(fs) > 0 {
			t.Logf("idle, %s: %.1f–%.1f frames/s", part, fs[0], fs[len(fs)-1])
			fmt.Printf("BenchmarkMetadataIdleFrames/%s\t1\t%.1f frames/s\n", part, fs[len(fs)-1])
		}
	}
	t.Logf("idle: %.0f metadata writes and %.0f reads in %.0f s over the cluster", writesIdle, readsIdle, elapsed)

	// Writes: directive changes through a member that is not a voter.
	var via *daemon
	for i, d := range ds {
		if after[i].value("shardmesh_metadata_replica") == 0 {
			via = d
			break
		}
	}
	if via == nil {
		t.Fatal("every member holds a replica")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	cl, err := admin.Dial(ctx, admin.ClientConfig{Node: via.addr(), Identity: adminKey})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	before = scrapeAll()
	var calls []time.Duration
	for i := range changes {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		began := time.Now()
		_, err := cl.RebalancePause(ctx, i%2 == 0)
		calls = append(calls, time.Since(began))
		cancel()
		if err != nil {
			t.Fatalf("directive change %d through %s: %v", i, via.name, err)
		}
	}
	after = scrapeAll()
	var count, sum float64
	hist := map[float64]float64{} // upper bound → cumulative count, over the members
	for i := range ds {
		count += after[i].value("shardmesh_metadata_call_duration_seconds", "call", "write") - before[i].value("shardmesh_metadata_call_duration_seconds", "call", "write")
		sum += histSum(after[i], "write") - histSum(before[i], "write")
		for ub, n := range histBuckets(after[i], "write") {
			hist[ub] += n - histBuckets(before[i], "write")[ub]
		}
	}
	if count == 0 {
		t.Fatal("no metadata write timed during the directive changes")
	}
	fsync := fsyncLatency(t, filepath.Dir(via.dir), 200)
	p50, p99 := histQuantile(0.5, hist, count), histQuantile(0.99, hist, count)
	slices.Sort(calls)
	t.Logf("%d directive changes through %s (not a voter): %.0f metadata writes, mean %.2f ms, p50 ≈ %.2f ms, p99 ≈ %.2f ms (histogram); the calls themselves p50 %.1f ms (they wait for every member to follow)",
		changes, via.name, count, sum/count*1000, p50*1000, p99*1000, float64(calls[len(calls)/2].Microseconds())/1000)
	t.Logf("fsync of a 200-byte write on the daemons' disk, same run: p50 %.2f ms; metadata write mean / fsync p50 = %.1f×",
		fsync.Seconds()*1000, sum/count/fsync.Seconds())
	fmt.Printf("BenchmarkMetadataWrite/mean\t%d\t%.0f ns/op\n", int(count), sum/count*1e9)
	fmt.Printf("BenchmarkMetadataWrite/fsync\t200\t%d ns/op\n", fsync.Nanoseconds())
}

// histSum is the sum of the samples of the metadata calls named call on s.
func histSum(s scrape, call string) float64 {
	total := 0.0
	for _, m := range s["shardmesh_metadata_call_duration_seconds"].GetMetric() {
		if labelsMatch(m, []string{"call", call}) {
			total += m.GetHistogram().GetSampleSum()
		}
	}
	return total
}

// histBuckets is the cumulative bucket counts of the metadata calls named call on s.
func histBuckets(s scrape, call string) map[float64]float64 {
	out := map[float64]float64{}
	for _, m := range s["shardmesh_metadata_call_duration_seconds"].GetMetric() {
		if labelsMatch(m, []string{"call", call}) {
			for _, b := range m.GetHistogram().GetBucket() {
				out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
	}
	return out
}

// histQuantile estimates quantile q of total samples from cumulative bucket counts as
// Prometheus' histogram_quantile does: linearly within the bucket it falls in (the highest
// finite bound when it falls past them).
func histQuantile(q float64, buckets map[float64]float64, total float64) float64 {
	bounds := make([]float64, 0, len(buckets))
	for ub := range buckets {
		bounds = append(bounds, ub)
	}
	slices.Sort(bounds)
	rank, lower, below := q*total, 0.0, 0.0
	for _, ub := range bounds {
		if n := buckets[ub]; n >= rank && n > below {
			return lower + (ub-lower)*(rank-below)/(n-below)
		}
		lower, below = ub, buckets[ub]
	}
	return lower
}

// fsyncLatency is the median time of n writes of 200 bytes, each followed by fsync, to a
// file in dir.
func fsyncLatency(t *testing.T, dir string, n int) time.Duration {
	t.Helper()
	f, err := os.CreateTemp(dir, "fsync-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 200)
	took := make([]time.Duration, n)
	for i := range took {
		began := time.Now()
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		took[i] = time.Since(began)
	}
	slices.Sort(took)
	return took[n/2]
}
