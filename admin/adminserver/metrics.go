package adminserver

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Metrics counts a server's admin calls by call and outcome, and times them. Create it with
// NewMetrics and pass it in ServerConfig.Metrics. Labels are bounded: call is one of the
// protocol's call names (or "malformed" for a request that did not decode), outcome the
// response code in lower case (ok, failed, bad_request, partial, refused).
type Metrics struct {
	calls   *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

// NewMetrics registers the admin metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_admin_calls_total",
			Help: "Admin calls answered by this member, by call and outcome (the response code: ok, failed, bad_request, partial, refused)."}, []string{"call", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardmesh_admin_call_duration_seconds",
			Help: "Time to answer an admin call (for streaming calls, until the stream ended).", Buckets: prometheus.ExponentialBuckets(.0005, 4, 9)}, []string{"call"}),
	}
	for _, c := range []prometheus.Collector{m.calls, m.seconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// record counts one call.
func (m *Metrics) record(call string, code adminpb.Code, took time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(call, outcomeLabel(code)).Inc()
	m.seconds.WithLabelValues(call).Observe(took.Seconds())
}

func outcomeLabel(c adminpb.Code) string {
	if name, ok := adminpb.Code_name[int32(c)]; ok {
		return strings.ToLower(name)
	}
	return "unknown"
}
