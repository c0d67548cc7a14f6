package remember

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The store's Prometheus metrics (Config.Metrics): the latency of Write, Get and Scan calls
// by outcome, the size of the batches that go out in one round and of the local group
// commits, and its counters (Stats) as counters. docs/metrics.md lists them.

// Buckets of the call latencies, in seconds: 100 µs to 10 s.
var storeLatencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Buckets of the batch sizes, in records: 1 to 16384.
var batchBuckets = prometheus.ExponentialBuckets(1, 4, 8)

// storeMetrics holds the store's collectors, with the children the calls use resolved once.
// A nil *storeMetrics records nothing.
type storeMetrics struct {
	write       [numOutcomes]prometheus.Observer
	get         [numOutcomes]prometheus.Observer
	scan        [numOutcomes]prometheus.Observer
	metaWrite   [numOutcomes]prometheus.Observer // the calls of metadata keys, again
	metaGet     [numOutcomes]prometheus.Observer
	metaScan    [numOutcomes]prometheus.Observer
	writeBatch  prometheus.Observer
	readBatch   prometheus.Observer
	commitBatch prometheus.Observer
	commitTime  prometheus.Observer
	layout      Layout // which calls are of metadata keys (nil: all)
}

// Outcomes of a call (the outcome label).
const (
	outcomeOK = iota
	outcomeFenced
	outcomeNoQuorum
	outcomeCanceled
	outcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "fenced", "no_quorum", "canceled", "error"}

func outcomeOf(err error) int {
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, ErrFenced):
		return outcomeFenced
	case errors.Is(err, ErrNoQuorum):
		return outcomeNoQuorum
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcomeCanceled
	}
	return outcomeError
}

func newStoreMetrics(reg prometheus.Registerer, s *Store) (*storeMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	calls := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardmesh_store_call_duration_seconds",
		Help:    "Latency of the store's calls on this member (call: write, get, scan), by outcome (ok, fenced, no_quorum, canceled, error).",
		Buckets: storeLatencyBuckets}, []string{"call", "outcome"})
	batches := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardmesh_store_batch_size",
		Help:    "Records per batch: batch=write the writes of one write round, read the keys of one read round, commit the records of one local group commit (one fsync).",
		Buckets: batchBuckets}, []string{"batch"})
	commit := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "shardmesh_store_commit_duration_seconds",
		Help: "Duration of the local group commits (one Badger WriteBatch and fsync each).", Buckets: storeLatencyBuckets})
	metaCalls := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardmesh_metadata_call_duration_seconds",
		Help:    "Latency of this member's calls of metadata keys (call: write, get, scan), answered by the metadata group, by outcome; also counted in shardmesh_store_call_duration_seconds.",
		Buckets: storeLatencyBuckets}, []string{"call", "outcome"})
	m := &storeMetrics{
		writeBatch:  batches.WithLabelValues("write"),
		readBatch:   batches.WithLabelValues("read"),
		commitBatch: batches.WithLabelValues("commit"),
		commitTime:  commit,
		layout:      s.cfg.Layout,
	}
	for i, o := range outcomeNames {
		m.write[i] = calls.WithLabelValues("write", o)
		m.get[i] = calls.WithLabelValues("get", o)
		m.scan[i] = calls.WithLabelValues("scan", o)
		m.metaWrite[i] = metaCalls.WithLabelValues("write", o)
		m.metaGet[i] = metaCalls.WithLabelValues("get", o)
		m.metaScan[i] = metaCalls.WithLabelValues("scan", o)
	}
	counter := func(name, help string, v func(Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v(s.Stats())) })
	}
	for _, c := range append([]prometheus.Collector{calls, metaCalls, batches, commit, newMetaCollector(s),
		counter("shardmesh_store_writes_total", "Writes of Write calls on this member.", func(st Stats) uint64 { return st.Writes }),
		counter("shardmesh_store_reads_total", "Keys read by Get calls on this member.", func(st Stats) uint64 { return st.Reads }),
		counter("shardmesh_store_refused_total", "Writes this replica refused for fencing.", func(st Stats) uint64 { return st.Refused }),
		counter("shardmesh_store_merged_total", "Entries read repair and anti-entropy changed on this replica.", func(st Stats) uint64 { return st.Merged }),
		counter("shardmesh_store_repairs_total", "Records sent to replicas that lagged.", func(st Stats) uint64 { return st.Repairs }),
		counter("shardmesh_store_sync_rounds_total", "Anti-entropy rounds that found differences.", func(st Stats) uint64 { return st.SyncRounds }),
		counter("shardmesh_store_malformed_frames_total", "Frames from peers that did not decode.", func(st Stats) uint64 { return st.Malformed }),
		counter("shardmesh_store_frames_dropped_total", "Frames not sent to replicas (peer unreachable, queue full).", func(st Stats) uint64 { return st.FramesDropped }),
	}, append(faultMetrics(s), moveMetrics(s)...)...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// start is when a call began; the zero time without metrics.
func (m *storeMetrics) start() time.Time {
	if m == nil {
		return time.Time{}
	}
	return time.Now()
}

// observe records a call's latency, in metaCall too when it was of metadata keys.
func (m *storeMetrics) observe(call, metaCall *[numOutcomes]prometheus.Observer, meta bool, start time.Time, err error) {
	took, o := time.Since(start).Seconds(), outcomeOf(err)
	call[o].Observe(took)
	if meta {
		metaCall[o].Observe(took)
	}
}

// wrote records a Write call; key is its first write's.
func (m *storeMetrics) wrote(start time.Time, key string, err error) {
	if m != nil {
		m.observe(&m.write, &m.metaWrite, m.layout == nil || m.layout.UnitOf(key).Meta(), start, err)
	}
}

func (m *storeMetrics) got(start time.Time, key string, err error) {
	if m != nil {
		m.observe(&m.get, &m.metaGet, m.layout == nil || m.layout.UnitOf(key).Meta(), start, err)
	}
}

func (m *storeMetrics) scanned(start time.Time, prefix string, err error) {
	if m != nil {
		u, one := Unit{}, true
		if m.layout != nil {
			u, one = m.layout.UnitOfPrefix(prefix)
		}
		m.observe(&m.scan, &m.metaScan, one && u.Meta(), start, err)
	}
}

func (m *storeMetrics) writeRound(n int) {
	if m != nil {
		m.writeBatch.Observe(float64(n))
	}
}

func (m *storeMetrics) readRound(n int) {
	if m != nil {
		m.readBatch.Observe(float64(n))
	}
}

func (m *storeMetrics) committed(records int, took time.Duration) {
	if m != nil {
		m.commitBatch.Observe(float64(records))
		m.commitTime.Observe(took.Seconds())
	}
}
