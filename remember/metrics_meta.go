package remember

import "github.com/prometheus/client_golang/prometheus"

// metaCollector exports this member's part in the metadata group: whether it holds a
// replica, votes and leads, the term and applied index it knows, and the group's frames it
// sent and received (Stats). One look at the store's loop per scrape.
type metaCollector struct {
	s                                 *Store
	replica, voter, leader, term, idx *prometheus.Desc
	sent, sentBytes, recv, recvBytes  *prometheus.Desc
}

func newMetaCollector(s *Store) *metaCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &metaCollector{
		s:         s,
		replica:   d("shardmesh_metadata_replica", "1 when this member holds a replica of the metadata group (it is, or is about to be, a voter)."),
		voter:     d("shardmesh_metadata_voter", "1 when this member's replica votes in the metadata group's configuration it applied."),
		leader:    d("shardmesh_metadata_leader", "1 when this member leads the metadata group."),
		term:      d("shardmesh_metadata_term", "The metadata group's term this member's replica knows (0 without a replica)."),
		idx:       d("shardmesh_metadata_applied_index", "The log index of the metadata group this member's replica applied (0 without a replica)."),
		sent:      d("shardmesh_metadata_frames_sent_total", "Frames of the metadata group (Raft messages) this member sent to other voters."),
		sentBytes: d("shardmesh_metadata_sent_bytes_total", "Bytes of those frames."),
		recv:      d("shardmesh_metadata_frames_received_total", "Frames of the metadata group this member received."),
		recvBytes: d("shardmesh_metadata_received_bytes_total", "Bytes of those frames."),
	}
}

func (c *metaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.replica, c.voter, c.leader, c.term, c.idx, c.sent, c.sentBytes, c.recv, c.recvBytes} {
		ch <- d
	}
}

func (c *metaCollector) Collect(ch chan<- prometheus.Metric) {
	st, stats := c.s.MetaStatus(), c.s.Stats()
	one := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(c.replica, one(st.Replica))
	gauge(c.voter, one(st.Voter))
	gauge(c.leader, one(st.Replica && st.Leader == c.s.self))
	gauge(c.term, float64(st.Term))
	gauge(c.idx, float64(st.Applied))
	counter(c.sent, stats.MetaSent)
	counter(c.sentBytes, stats.MetaSentBytes)
	counter(c.recv, stats.MetaReceived)
	counter(c.recvBytes, stats.MetaRecvBytes)
}
