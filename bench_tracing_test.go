package shardmesh_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
)

// BenchmarkTracingRemoteAsk: asks to entities on another member, on two pairs of members
// in the same run — one with tracing off (the default), one recording every span (the SDK
// with a batcher into an in-memory exporter) — asked in turn, so both see the same
// machine. Reports each pair's p50 and the ratio on/off: what tracing costs when on; off is
// the code path of every member without it.
func BenchmarkTracingRemoteAsk(b *testing.B) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	pair := func(opts ...shardmesh.Option) []shardmesh.EntityRef[int, int] {
		i := 0
		systems := startMembersOpts(b, 2, func(c *config.Config) {
			c.Sharding.Role = "worker"
			if i == 1 {
				c.Node.Roles = []string{"worker"}
			}
			i++
		}, func(int) []shardmesh.Option { return opts })
		if _, err := shardmesh.Init(systems[1], echoType("worker")); err != nil {
			b.Fatal(err)
		}
		r, err := shardmesh.Init(systems[0], echoType("worker"))
		if err != nil {
			b.Fatal(err)
		}
		refs := make([]shardmesh.EntityRef[int, int], 100)
		for i := range refs {
			refs[i] = r.EntityRefFor("e" + strconv.Itoa(i))
			if _, err := refs[i].Ask(context.Background(), i); err != nil {
				b.Fatal(err)
			}
		}
		return refs
	}
	off, on := pair(), pair(shardmesh.WithTracing(tp))
	ctx := context.Background()
	offs := make([]time.Duration, 0, b.N)
	ons := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		for _, p := range []struct {
			refs []shardmesh.EntityRef[int, int]
			out  *[]time.Duration
		}{{off, &offs}, {on, &ons}} {
			start := time.Now()
			if _, err := p.refs[i%len(p.refs)].Ask(ctx, i); err != nil {
				b.Fatal(err)
			}
			*p.out = append(*p.out, time.Since(start))
		}
		if i%1000 == 999 {
			exp.Reset() // the spans are not kept: memory stays flat
		}
	}
	b.StopTimer()
	o50, t50 := percentile(offs, 0.5), percentile(ons, 0.5)
	b.ReportMetric(float64(o50.Microseconds()), "off-p50-µs")
	b.ReportMetric(float64(t50.Microseconds()), "on-p50-µs")
	b.ReportMetric(float64(t50)/float64(o50), "on/off-p50")
	b.ReportMetric(float64(percentile(offs, 0.99).Microseconds()), "off-p99-µs")
	b.ReportMetric(float64(percentile(ons, 0.99).Microseconds()), "on-p99-µs")
}
