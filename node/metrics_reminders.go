package node

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reminderMetrics are the metrics of durable reminders (core_reminders.go).
type reminderMetrics struct {
	held     *prometheus.GaugeVec
	due      *prometheus.GaugeVec
	fired    *prometheus.CounterVec
	late     *prometheus.CounterVec
	lateness *prometheus.HistogramVec
	adopted  *prometheus.CounterVec
}

// Buckets of reminders' lateness, in seconds: 1 ms to 10 min.
var latenessBuckets = []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600}

func newReminderMetrics() *reminderMetrics {
	typ := []string{"type"}
	return &reminderMetrics{
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardmesh_reminders",
			Help: "Durable reminders of the shards this member hosts (loaded and claimed)."}, typ),
		due: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardmesh_reminders_due",
			Help: "Durable reminders whose time has come and whose firing is not yet handled and stored (sampled each tick)."}, typ),
		fired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_reminders_fired_total",
			Help: "Firings of durable reminders by this member (a firing tried again counts again)."}, typ),
		late: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_reminders_late_total",
			Help: "Firings of durable reminders at least 1 s after their scheduled time."}, typ),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardmesh_reminder_lateness_seconds",
			Help: "Time from a reminder's scheduled time to its firing.", Buckets: latenessBuckets}, typ),
		adopted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_reminders_adopted_total",
			Help: "Durable reminders a home found stored when it read its shard's reminders again, not among those it held: writes that landed after its load (core_reminders_rescan.go)."}, typ),
	}
}

func (r *reminderMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.held, r.due, r.fired, r.late, r.lateness, r.adopted}
}

// remindersHeld adds delta to the reminders held for typ.
func (m *metrics) remindersHeld(typ string, delta int) {
	if m == nil || delta == 0 {
		return
	}
	m.rem.held.WithLabelValues(typ).Add(float64(delta))
}

// remindersAdopted counts a reminder adopted by a read again.
func (m *metrics) remindersAdopted(typ string) {
	if m == nil {
		return
	}
	m.rem.adopted.WithLabelValues(typ).Inc()
}

// reminderFired counts a firing, late by late.
func (m *metrics) reminderFired(typ string, late time.Duration) {
	if m == nil {
		return
	}
	m.rem.fired.WithLabelValues(typ).Inc()
	m.rem.lateness.WithLabelValues(typ).Observe(max(late, 0).Seconds())
	if late >= ReminderLateAfter {
		m.rem.late.WithLabelValues(typ).Inc()
	}
}

// sampleReminders sets the due reminders of every type with reminders here.
func (c *Core) sampleReminders() {
	if c.metrics == nil {
		return
	}
	due := map[string]int{}
	for _, k := range c.rem.order {
		due[k.typ] += c.rem.shards[k].due
	}
	for _, typ := range c.eng.Types() {
		c.metrics.rem.due.WithLabelValues(typ).Set(float64(due[typ]))
	}
}
