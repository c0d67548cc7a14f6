package node

import (
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh/region"
)

// BenchmarkRecordDelivered: what a routed message costs in metrics — a count on the loop
// goroutine, added to the pre-resolved counter once per 64 messages here (once per pass
// over the engine's output in the member) — with metrics on and off (a nil *typeMetrics).
func BenchmarkRecordDelivered(b *testing.B) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tm   *typeMetrics
	}{{"on", m.forType("t")}, {"off", nil}} {
		b.Run(c.name, func(b *testing.B) {
			for i := range b.N {
				c.tm.delivered()
				if i%64 == 63 && c.tm != nil {
					c.tm.flush()
				}
			}
		})
	}
}

func TestRejectReason(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", region.ErrBufferFull), reasonBufferFull},
		{region.ErrTooManyHops, reasonTooManyHops},
		{region.ErrShuttingDown, reasonShuttingDown},
		{fmt.Errorf("send to t: %w", ErrTypeStopped), reasonTypeStopped},
		{ErrStopped, reasonStopped},
		{unknownType("t"), reasonUnknownType},
		{fmt.Errorf("entity e: %w: closed", errNotRunning), reasonNotRunning},
		{fmt.Errorf("%w: %w", errSendFailed, errors.New("dial")), reasonSendFailed},
		{fmt.Errorf("decode: %w: %w", ErrUndecodable, errors.New("eof")), reasonUndecodable},
		{errors.New("something else"), reasonOther},
	} {
		if got := rejectReason(c.err); got != c.want {
			t.Errorf("rejectReason(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// TestMetricsRegistryPerMember: two members' metrics in separate registries do not
// collide, and registering twice in one registry is an error, not a panic.
func TestMetricsRegistryPerMember(t *testing.T) {
	for range 2 {
		if _, err := newMetrics(prometheus.NewRegistry()); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := newMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := newMetrics(reg); err == nil {
		t.Fatal("registering a second member's metrics in the same registry succeeded")
	}
	if m, err := newMetrics(nil); m != nil || err != nil {
		t.Fatalf("no registry: %v, %v; want nil, nil", m, err)
	}
}
