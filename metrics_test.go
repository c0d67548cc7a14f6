package shardmesh_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/admin/adminserver"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/passivation"
)

// metricValue sums the samples of family name whose labels include want (a counter's or
// gauge's value, a histogram's sample count).
func metricValue(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// TestMetricsRecorded: two members in one process, each with its own registry; asks from
// one of them move the counters as the load says.
func TestMetricsRecorded(t *testing.T) {
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	systems := startMembersOpts(t, 2, func(c *config.Config) { c.Membership.MinNrOfMembers = 2 },
		func(i int) []shardmesh.Option { return []shardmesh.Option{shardmesh.WithMetrics(regs[i])} })
	regions := make([]*shardmesh.Region[string, int], len(systems))
	for i, s := range systems {
		r, err := shardmesh.Init(s, counterType())
		if err != nil {
			t.Fatal(err)
		}
		regions[i] = r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const asks = 200
	for e := range asks {
		if _, err := regions[0].EntityRefFor("m"+strconv.Itoa(e)).Ask(ctx, "inc"); err != nil {
			t.Fatal(err)
		}
	}
	typ := map[string]string{"type": "counter"}
	sum := func(name string, labels map[string]string) float64 {
		return metricValue(t, regs[0], name, labels) + metricValue(t, regs[1], name, labels)
	}
	if got := sum("shardmesh_messages_routed_total", map[string]string{"type": "counter", "route": "local"}); got != asks {
		t.Errorf("messages routed locally over both members: %v, want %d", got, asks)
	}
	if got := metricValue(t, regs[1], "shardmesh_messages_routed_total", map[string]string{"route": "remote"}); got != 0 {
		t.Errorf("member 2 forwarded %v messages; it sent none", got)
	}
	if got := metricValue(t, regs[0], "shardmesh_asks_total", map[string]string{"type": "counter", "outcome": "ok"}); got != asks {
		t.Errorf("asks ok on member 1: %v, want %d", got, asks)
	}
	if got := metricValue(t, regs[0], "shardmesh_ask_duration_seconds", typ); got != asks {
		t.Errorf("ask latencies observed on member 1: %v, want %d", got, asks)
	}
	if got := sum("shardmesh_entity_starts_total", typ); got != asks {
		t.Errorf("entity starts: %v, want %d", got, asks)
	}
	if got := sum("shardmesh_entities", typ); got != asks {
		t.Errorf("live entities: %v, want %d", got, asks)
	}
	// Shard gauges are sampled on ticks; the allocation is known at once.
	deadline := time.Now().Add(5 * time.Second)
	for {
		shards, allocated := sum("shardmesh_shards", typ), sum("shardmesh_coordinator_allocated_shards", typ)
		if shards == allocated && shards > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards hosted %v, allocated by the coordinator %v", shards, allocated)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := sum("shardmesh_coordinator", typ); got != 1 {
		t.Errorf("members running the coordinator: %v, want 1", got)
	}
	for i, reg := range regs {
		if got := metricValue(t, reg, "shardmesh_members", map[string]string{"status": "Up"}); got != 2 {
			t.Errorf("member %d sees %v members Up, want 2", i+1, got)
		}
		if got := metricValue(t, reg, "shardmesh_store_call_duration_seconds", map[string]string{"call": "scan", "outcome": "ok"}); got == 0 {
			t.Errorf("member %d: no store scan recorded (members read the directives)", i+1)
		}
	}
}

// BenchmarkLocalTellMetrics: local Tell (1,000 entities, no passivation) on four members in
// one process, started in the order without, with, with, without metrics, and fed in turn
// (the order rotating) in slices of 20,000 messages, so that both kinds see the same machine
// load and neither gains from its place. It reports the median time per message of each
// kind and their ratio (on-vs-off: 1.03 means metrics cost 3% of the throughput).
func BenchmarkLocalTellMetrics(b *testing.B) {
	type side struct {
		metrics bool
		refs    []shardmesh.EntityRef[int, int]
		n       *atomic.Int64
		sent    int64
	}
	var sides []*side
	for _, on := range []bool{false, true, true, false} {
		var opts func(int) []shardmesh.Option
		if on {
			opts = func(int) []shardmesh.Option {
				return []shardmesh.Option{shardmesh.WithMetrics(prometheus.NewRegistry())}
			}
		}
		sys := startMembersOpts(b, 1, nil, opts)[0]
		s := &side{metrics: on, n: new(atomic.Int64)}
		e := sinkType(s.n)
		pass := passivation.Disabled()
		e.Passivation = &pass
		r, err := shardmesh.Init(sys, e)
		if err != nil {
			b.Fatal(err)
		}
		for j := range 1000 {
			ref := r.EntityRefFor("e" + strconv.Itoa(j))
			if _, err := ref.Ask(context.Background(), 0); err != nil {
				b.Fatal(err)
			}
			s.refs = append(s.refs, ref)
		}
		s.sent = s.n.Load()
		sides = append(sides, s)
	}
	const slice = 20000
	var off, on []float64 // ns per message, per slice
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		k := min(slice, b.N-done)
		for turn := range sides {
			s := sides[(round+turn)%len(sides)]
			start := time.Now()
			for i := range k {
				if err := s.refs[i%len(s.refs)].Tell(i); err != nil {
					b.Fatal(err)
				}
			}
			s.sent += int64(k)
			for s.n.Load() < s.sent {
				time.Sleep(20 * time.Microsecond)
			}
			perMsg := float64(time.Since(start).Nanoseconds()) / float64(k)
			if s.metrics {
				on = append(on, perMsg)
			} else {
				off = append(off, perMsg)
			}
		}
		done += k
	}
	b.StopTimer()
	b.ReportMetric(median(off), "off-ns/msg")
	b.ReportMetric(median(on), "on-ns/msg")
	b.ReportMetric(median(on)/median(off), "on-vs-off")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// describing records the names of the metrics registered through it.
type describing struct {
	prometheus.Registerer
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names[m[1]] = true
		}
	}
	return d.Registerer.Register(c)
}

// TestMetricsDocumented: every metric a member, its store and the admin server register is
// in docs/metrics.md, and every shardmesh metric the sample dashboard queries exists.
func TestMetricsDocumented(t *testing.T) {
	reg := &describing{Registerer: prometheus.NewRegistry(), names: map[string]bool{}}
	startMembersOpts(t, 1, nil, func(int) []shardmesh.Option { return []shardmesh.Option{shardmesh.WithMetrics(reg)} })
	if _, err := adminserver.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if len(reg.names) < 30 {
		t.Fatalf("only %d metrics registered: %v", len(reg.names), reg.names)
	}
	doc, err := os.ReadFile("docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range reg.names {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("%s is not documented in docs/metrics.md", name)
		}
	}
	raw, err := os.ReadFile("docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	used := regexp.MustCompile(`shardmesh_[a-z_]+`)
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range used.FindAllString(tg.Expr, -1) {
				queried++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && reg.names[b] {
						base = b
					}
				}
				if !reg.names[base] {
					t.Errorf("dashboard panel %q queries %s, which no member registers", p.Title, name)
				}
			}
		}
	}
	if queried == 0 {
		t.Error("the dashboard queries no shardmesh metric")
	}
}
