package remember

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestMetadataMetrics: real stores on libp2p and Badger, three voters. The group's gauges
// name one leader and three voters, every voter counts frames both ways, and only the
// calls of metadata keys are timed as the metadata group's.
func TestMetadataMetrics(t *testing.T) {
	var regs []*prometheus.Registry
	c := unitCluster(t, 3, func(cfg *Config) {
		reg := prometheus.NewRegistry()
		regs = append(regs, reg)
		cfg.Metrics = reg
	})
	ctx := testContext(t)
	u := Unit{Type: "t", Shard: "1"}
	c.stores[0].Host(u, 1)
	if err := c.stores[0].Write(ctx, Write{Key: "m/x", Value: []byte("v"), Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.stores[0].Write(ctx, Write{Key: "u/1/e", Value: []byte("v"), Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.stores[0].Get(ctx, "m/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.stores[0].Scan(ctx, "m/"); err != nil {
		t.Fatal(err)
	}
	// The harness makes a configuration it opens no store with, too.
	regs = slices.DeleteFunc(regs, func(reg *prometheus.Registry) bool {
		fams, err := reg.Gather()
		return err == nil && len(fams) == 0
	})
	if len(regs) != 3 {
		t.Fatalf("%d registries in use, want 3", len(regs))
	}
	waitFor(t, "three voters and one leader", func() bool {
		var voters, leaders float64
		for _, reg := range regs {
			voters += gathered(t, reg, "shardmesh_metadata_voter", "", "")
			leaders += gathered(t, reg, "shardmesh_metadata_leader", "", "")
		}
		return voters == 3 && leaders == 1
	})
	for i, reg := range regs {
		if got := gathered(t, reg, "shardmesh_metadata_term", "", ""); got < 1 {
			t.Errorf("member %d: term %v", i, got)
		}
		if got := gathered(t, reg, "shardmesh_metadata_applied_index", "", ""); got < 1 {
			t.Errorf("member %d: applied index %v", i, got)
		}
		for _, name := range []string{"shardmesh_metadata_frames_sent_total", "shardmesh_metadata_sent_bytes_total",
			"shardmesh_metadata_frames_received_total", "shardmesh_metadata_received_bytes_total"} {
			if got := gathered(t, reg, name, "", ""); got == 0 {
				t.Errorf("member %d: %s is 0", i, name)
			}
		}
	}
	for call, want := range map[string]float64{"write": 1, "get": 1, "scan": 1} {
		if got := gathered(t, regs[0], "shardmesh_metadata_call_duration_seconds", "call", call); got != want {
			t.Errorf("metadata %s calls timed: %v, want %v", call, got, want)
		}
	}
	if got := gathered(t, regs[0], "shardmesh_store_call_duration_seconds", "call", "write"); got != 2 {
		t.Errorf("store write calls timed: %v, want 2 (a metadata key's and a shard's)", got)
	}
}

// gathered sums the samples of family name in reg whose label (when not "") has value: a
// counter's or gauge's value, a histogram's count.
func gathered(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && !hasLabel(m, label, value) {
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

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
